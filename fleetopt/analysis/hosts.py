"""Hosts that measured less than their share: their records, and cells for what they left.

Each fleet host leaves a record under `hosts/<host>.json` (written by the campaign role):
its plan, and why it stopped early when it did (unreachable, unhealthy, failed). A variant
that a host was to run but has no cell for becomes a `skipped` cell with that reason, so
the matrix lists every planned cell and never drops a host's share silently. A host that
was unreachable from the start has no plan; its share is worked out the way the role
spreads variants (host k of n takes every n-th optimization; every host its own baseline).
"""
import pathlib

from fleetopt.files import json_records, write_json_atomically

BASELINES = ("baseline", "baseline_aa")
TROUBLE = ("unreachable", "unhealthy", "failed")


def load_records(campaign_dir):
    """{host: its record} of the hosts/ folder."""
    return {record.get("host") or path.stem: record for path, record in json_records(campaign_dir, "hosts/*.json")}


def share(all_variants, fleet, host, spread):
    """The variants `host` runs, as the campaign role assigns them."""
    optimizations = [v for v in all_variants if v not in BASELINES]
    if spread and len(fleet) > 1 and host in fleet:
        optimizations = optimizations[sorted(fleet).index(host)::len(fleet)]
    head = [v for v in all_variants if v == "baseline"]
    tail = [v for v in all_variants if v == "baseline_aa"]
    return head + optimizations + tail


def reference_plan(records):
    for record in records.values():
        if record.get("all_variants"):
            return record
    return None


def expected_variants(host, record, records):
    if record.get("variants"):
        return record["variants"]
    plan = reference_plan(records)
    if plan is None:
        return ["baseline"]
    return share(plan["all_variants"], plan.get("fleet") or sorted(records), host, plan.get("spread", True))


def skipped_reason(record):
    if record.get("status") in TROUBLE and record.get("reason"):
        return "not run: %s" % record["reason"]
    return "not run: the campaign ended before this variant (interrupted?)"


def fill_missing_cells(campaign_dir, cells):
    """Write a `skipped` cell for every planned (host, variant) without one; returns them."""
    records = load_records(campaign_dir)
    have = {(c.get("host"), c.get("variant")) for c in cells}
    plan = reference_plan(records) or {}
    titles = plan.get("titles") or {}
    order = {v: i for i, v in enumerate(plan.get("all_variants") or [])}
    made = []
    for host, record in sorted(records.items()):
        for variant in expected_variants(host, record, records):
            if (host, variant) in have:
                continue
            cell = {
                "schema": "fleetopt.cell/1", "cell_key": None, "synthesized": True,
                "campaign": pathlib.Path(campaign_dir).name, "host": host, "variant": variant,
                "engine": record.get("engine") or plan.get("engine"),
                "title": titles.get(variant, variant), "order": order.get(variant, len(order)),
                "status": "skipped", "reason": skipped_reason(record), "failure": None, "levels": [],
                "startup": {}, "launch": {}, "benchmark": {}, "provenance": {},
            }
            write_json_atomically(pathlib.Path(campaign_dir, "cells", host, "%s.json" % variant), cell)
            made.append(cell)
    return made


def troubled_hosts(campaign_dir):
    """[(host, status, reason)] of hosts that did not finish their share cleanly."""
    return [(h, r.get("status"), r.get("reason")) for h, r in sorted(load_records(campaign_dir).items())
            if r.get("status") in TROUBLE]
