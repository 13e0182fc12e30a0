"""Regression gate: compare a campaign with a stored reference campaign.

A row (host, variant, concurrency) fails the gate when its verdict metric regressed by more
than the threshold against the same row of the reference: significantly so where both
campaigns have two or more trials, or by the plain difference of means otherwise.

The gate also fails when it could not compare everything the reference holds: every row that
was `ok` in the reference must be `ok` now and compared. A cell that crashed, timed out or is
missing, a concurrency level that is missing or failed, a reference host that is not in this
campaign, or a reference with no `ok` row at all is named, so that a gate which compared
nothing never passes. Hosts are matched by their inventory name (the `host` of each row);
`host_map` maps a reference host to its name in this campaign when a machine was renamed.

A compared row whose interval can neither show a regression nor equivalence within the
threshold is `inconclusive`: it is reported, and fails the gate only when asked
(`fail_on_inconclusive`, `fleetopt run --fail-on-inconclusive`). The intervals of a variant's
levels on a host are simultaneous over those levels (Bonferroni), as in the summary. As in the
summary, the launch is the unit where a configuration of the host was launched twice at a level (in
either campaign): the two campaigns' launch means, their spread pooled over both campaigns'
configurations there. Two campaigns are two launches at least, so a comparison over trials would
take a launch's offset for a regression.
"""
import json
import pathlib

from fleetopt.analysis import stats
from fleetopt.analysis.summary import compare_rows, pooled_launch_variances


def load_summary(path):
    path = pathlib.Path(path)
    if path.is_dir():
        path = path / "summary.json"
    if not path.exists():
        raise SystemExit("fleetopt: no reference summary at %s" % path)
    return json.loads(path.read_text())


def parse_host_map(pairs):
    """{reference host: current host} from OLD=NEW items (each may hold several, comma-separated)."""
    mapping = {}
    for item in pairs or []:
        for pair in item.split(","):
            pair = pair.strip()
            if not pair:
                continue
            old, sep, new = pair.partition("=")
            if not sep or not old.strip() or not new.strip():
                raise SystemExit("fleetopt run: --gate-host-map wants REFERENCE_HOST=CURRENT_HOST, got %r" % pair)
            old, new = old.strip(), new.strip()
            if old in mapping and mapping[old] != new:
                raise SystemExit("fleetopt run: --gate-host-map maps %s twice (%s, %s)" % (old, mapping[old], new))
            mapping[old] = new
    return mapping


def _compare(row, ref, threshold_pct, metric, family_size=1, pooled=None):
    """The row against the reference's: over launch means where either campaign launched a configuration of the
    host twice at the level (`pooled`: summary.pooled_launch_variances over both), else over trials."""
    return compare_rows(row, ref, metric, pooled or {}, stats.DEFAULT_CONFIDENCE, threshold_pct, family_size)


def evaluate(current, reference, threshold_pct, metric="output_throughput", host_map=None):
    """Compare every `ok` row of `reference` with the same row of `current`.

    Returns {"regressions": [...], "inconclusive": [...], "uncompared": [...], "compared": N,
    "reference_rows": M, "missing_hosts": [...], "current_hosts": [...]}. An uncompared entry names the reference
    row(s) it covers (host as in this campaign, variant, concurrency or None for a whole cell),
    the reason kind (`not_ok`, `missing_cell`, `missing_row`, `not_comparable`) and the status
    and reason of the current row when there is one.
    """
    host_map = host_map or {}
    higher_is_better = stats.HIGHER_IS_BETTER[metric]
    rows = {}
    cells = {}
    for row in current["cells"]:
        rows[(row["host"], row["variant"], row["concurrency"])] = row
        cells.setdefault((row["host"], row["variant"]), []).append(row)
    current_hosts = sorted({row["host"] for row in current["cells"]})

    wanted = [r for r in reference["cells"] if r["status"] == "ok"]
    pooled = pooled_launch_variances(
        [r for r in current["cells"] if "samples" in r]
        + [dict(r, host=host_map.get(r["host"], r["host"])) for r in wanted if "samples" in r])
    family = {}
    for ref in wanted:
        key = (host_map.get(ref["host"], ref["host"]), ref["variant"])
        if (rows.get(key + (ref["concurrency"],)) or {}).get("status") == "ok":
            family[key] = family.get(key, 0) + 1
    result = {"regressions": [], "inconclusive": [], "uncompared": [], "compared": 0, "reference_rows": len(wanted),
              "missing_hosts": [], "current_hosts": current_hosts, "host_map": dict(host_map)}
    missing_hosts = set()
    whole_cells = {}  # (host, variant) -> the one entry that covers a cell not measured now

    def cell_entry(host, variant, **fields):
        entry = whole_cells.get((host, variant))
        if entry is None:
            entry = whole_cells[(host, variant)] = dict(fields, host=host, variant=variant, concurrency=None, rows=0)
            result["uncompared"].append(entry)
        entry["rows"] += 1

    for ref in wanted:
        host = host_map.get(ref["host"], ref["host"])
        row = rows.get((host, ref["variant"], ref["concurrency"]))
        if row is None:
            whole = rows.get((host, ref["variant"], None))
            if host not in current_hosts:
                missing_hosts.add((ref["host"], host))
            elif whole is not None and whole["status"] != "ok":
                cell_entry(host, ref["variant"], kind="not_ok", status=whole["status"], reason=whole.get("reason"))
            elif (host, ref["variant"]) not in cells:
                cell_entry(host, ref["variant"], kind="missing_cell")
            else:
                result["uncompared"].append({"kind": "missing_row", "host": host, "variant": ref["variant"],
                                             "concurrency": ref["concurrency"], "rows": 1})
            continue
        if row["status"] != "ok":
            result["uncompared"].append({"kind": "not_ok", "host": host, "variant": ref["variant"],
                                         "concurrency": ref["concurrency"], "status": row["status"],
                                         "reason": row.get("reason"), "rows": 1})
            continue
        comparison = _compare(row, ref, threshold_pct, metric, family.get((host, ref["variant"]), 1), pooled)
        if comparison is None:
            result["uncompared"].append({"kind": "not_comparable", "host": host, "variant": ref["variant"],
                                         "concurrency": ref["concurrency"], "metric": metric, "rows": 1})
            continue
        result["compared"] += 1
        worse = -comparison["change_pct"] if higher_is_better else comparison["change_pct"]
        failed = comparison["verdict"] == "regressed" if comparison["tested"] else worse > threshold_pct
        found = {"host": host, "variant": ref["variant"], "concurrency": ref["concurrency"], "metric": metric,
                 "change_pct": comparison["change_pct"], "ci_low_pct": comparison["ci_low_pct"],
                 "ci_high_pct": comparison["ci_high_pct"]}
        if failed:
            result["regressions"].append(found)
        elif comparison["verdict"] == "inconclusive":
            result["inconclusive"].append(dict(found, reason=comparison["reason"]))
    for ref_host, host in sorted(missing_hosts):
        count = sum(1 for r in wanted if host_map.get(r["host"], r["host"]) == host)
        result["missing_hosts"].append({"reference_host": ref_host, "host": host, "rows": count})
    return result


def regressions(current, reference, threshold_pct, metric="output_throughput", host_map=None):
    """Rows of `current` that regressed beyond `threshold_pct` against `reference`."""
    return evaluate(current, reference, threshold_pct, metric, host_map)["regressions"]


def verdict(result, fail_on_inconclusive=False):
    """"regression" when a compared row regressed, else "incomplete" when anything the reference
    holds was not compared (or it holds nothing to compare), else "inconclusive" when a compared
    row was inconclusive and `fail_on_inconclusive`, else "pass"."""
    if result["regressions"]:
        return "regression"
    if result["uncompared"] or result["missing_hosts"] or result["compared"] < result["reference_rows"] \
            or result["reference_rows"] == 0:
        return "incomplete"
    if fail_on_inconclusive and result.get("inconclusive"):
        return "inconclusive"
    return "pass"


def _where(entry):
    text = "%s on %s" % (entry["variant"], entry["host"])
    if entry.get("concurrency") is not None:
        text += " at concurrency %s" % entry["concurrency"]
    return text


def describe(result, threshold_pct, reference_name):
    """One line per finding, then the count of rows compared."""
    lines = []
    for row in result["regressions"]:
        lines.append("%(variant)s on %(host)s at concurrency %(concurrency)s: %(metric)s %(change_pct)+.1f %%" % row)
    for row in result.get("inconclusive") or []:
        lines.append("%s: %s inconclusive against the reference: %s" % (_where(row), row["metric"], row["reason"]))
    for entry in result["missing_hosts"]:
        others = [h for h in result["current_hosts"] if h not in result["host_map"].values()]
        hint = (" (this campaign has %s; if it is the same machine, give --gate-host-map %s=%s)"
                % (", ".join(others), entry["reference_host"], others[0]) if others else "")
        name = entry["reference_host"] if entry["host"] == entry["reference_host"] else \
            "%s (mapped to %s)" % (entry["reference_host"], entry["host"])
        lines.append("host %s of the reference is not in this campaign: %d ok row(s) not compared%s"
                     % (name, entry["rows"], hint))
    for entry in result["uncompared"]:
        if entry["kind"] == "not_ok":
            reason = " (%s)" % entry["reason"] if entry.get("reason") else ""
            lines.append("%s was ok in the reference and is %s now%s" % (_where(entry), entry["status"], reason))
        elif entry["kind"] in ("missing_cell", "missing_row"):
            lines.append("%s is not in this campaign (it was ok in the reference)" % _where(entry))
        else:
            lines.append("%s: no %s to compare" % (_where(entry), entry["metric"]))
    if result["reference_rows"] == 0:
        lines.append("the reference %s holds no ok row: nothing to compare" % reference_name)
    lines.append("compared %d of %d reference rows" % (result["compared"], result["reference_rows"]))
    return lines
