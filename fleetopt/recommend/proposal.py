"""The recommendation of a finished single-optimization matrix: results/<id>/recommended.yml.

Candidates are the optimizations whose verdict is `improved` on every host that measured them.
They are taken in order of measured effect (the largest change of the verdict metric at any of
their levels, the smallest over hosts) and added to the stack one by one, unless one conflicts
with a candidate already in it:

- declared: either catalog entry names the other under `conflicts` (each cell records its
  entry's, so the inventory's own optimizations can declare them too);
- found: both change the same server flag or environment variable to different values
  (setting against removing included), so they cannot both be in one launch.

Every other optimization is left out with the reason: regressed (or mixed), conflicting,
crashed (crashed, blocked, timeout, error), not_significant (neutral: equivalent to the
baseline), inconclusive, no_effect (its server ran the baseline's configuration), not_applicable,
not_measured (skipped).

The stack is a proposal: with two or more candidates it has not been measured as one launch,
and its status says so. The proposal names the variant that measures it (`stacked_variant`: the
baseline with every candidate's changes, a catalog entry whose `stacked.composes` lists them),
which `-e recommend=true` measures as one more cell of the campaign. A single candidate is
measured again too: chosen as the best of several variants, its own measurement overstates its
gain (the winner's curse), and a launch of its own gives the gain that did not choose it (improved:
`measured as a stack`; anything else: `inconclusive`, keep the baseline). The stack stage measures the
baseline again beside the stack (`stacked.baseline`, e.g. `baseline_stack`: planned just before it, so
the ABBA order brackets the stack with it), because the matrix's baseline may be hours older and a
drift of the host would pose as the stack's effect. Once those cells are in, the stack is compared with
that baseline (its gain with the interval; fleetopt.analysis.summary) and, level by level on the same host,
with the best single candidate (the one of largest measured effect), measured in the matrix: through
their effects, each against the baseline of its own stage (stats.compare_effects), never one stage's
measurement against another's:

- improved against the baseline and against the best single candidate: `measured as a stack`;
- improved against the baseline but not shown better than the best single candidate, or
  regressed, neutral or crashed against the baseline: the best single candidate is recommended
  (it was measured alone), the status says why, and the other candidates are left out as
  `stack_not_better`;
- inconclusive against the baseline: the status is `inconclusive`, and what is recommended is
  again the best single candidate, measured alone.

Each step of the greedy search is measured in a stage of its own beside its own baseline
(`baseline_stack_<n>`) and compared with the configuration it builds on in the same way.

A campaign that measured a stack but no single candidate (`-e recommended=<file>`) verifies an
earlier recommendation (it runs no matrix, so its baseline is measured in the stack stage itself):
improved is `measured as a stack`; inconclusive is `inconclusive`; neutral, regressed or crashed is
`not confirmed`, and the baseline stays. `verify_variant` is what such a
campaign measures: the recommended configuration's changes against the baseline. Its inventory variables are the baseline's flags and environment with
each candidate's changes applied (a removed flag stays as null, so the catalog's baseline cannot
put it back); its launch command is the baseline's with those flags, through the engine's adapter.
Each candidate keeps its measured gain with its interval and its capacity under the SLOs.

With the verdicts on capacity (campaign_verdict_metric: capacity), a gain is the change of capacity
against the baseline's (fleetopt.analysis.capacity_verdict; no interval: a capacity is a level), shown at the
level that decided it; the order of measured effect is that change. A stack and the configuration it
is to improve on were measured in different stages, each beside a baseline of its own; capacities are
levels, with no ratio of gains to cancel a drift through, so they are compared directly only where
each stage's baseline had the matrix's baseline's capacity (neutral on capacity, the same to the
unit), and are inconclusive otherwise, with the reason.
"""
import shlex

import yaml

from fleetopt.files import write_atomically
from fleetopt.analysis.launches import launch_details, merge_launches
from fleetopt.analysis.summary import BASELINE
from fleetopt.recommend import STATUS_NONE, STATUS_PROPOSED, STATUS_SINGLE
from fleetopt.recommend.candidates import WHY_ORDER, choose_candidates, split_variants, without_conflicts
from fleetopt.recommend.gains import capacity_brief, effect_text, shown_pct
from fleetopt.recommend.judge import judge_single, judge_stack, unmeasured_notes, verify_stack
from fleetopt.recommend.variants import as_variant, stacked_launch, stage_variant, union

# Makes the collection's module_utils importable.
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import REDACTED


def recommend(summary, cells):
    """The recommendation (a dict, the content of recommended.yml) from a summary and its cells: choose the
    candidates, stack those that do not conflict, judge the stack where a cell measured it (the greedy search
    included), and put the recommended configuration's launch together."""
    metric = (summary.get("settings") or {}).get("verdict_metric", "output_throughput")
    merged = {(c["host"], c["variant"]): c for c in merge_launches(cells)}
    entries, stacks = split_variants(summary, merged)
    candidates, left_out = choose_candidates(summary, entries, merged, metric)
    stack = without_conflicts(candidates, left_out)
    proposed = [c["id"] for c in stack]
    decision = {"status": STATUS_PROPOSED if len(stack) > 1 else STATUS_SINGLE if stack else STATUS_NONE,
                "outcome": "proposed" if len(stack) > 1 else "single" if stack else "baseline",
                "measured": None, "verifies": None, "stack": stack, "ids": proposed, "changes": union(stack),
                "search": None,
                "stacked_variant": stage_variant(proposed, union(stack), "Stack: %s" % " + ".join(proposed),
                                                 {"proposed_by": summary.get("campaign")}) if stack else None}
    notes = []
    if entries:
        # The stack of this proposal, when a cell measured it; any other stack is an earlier proposal's
        # (or a step of the greedy search).
        found = [v for v in stacks if list((v.get("stacked") or {}).get("composes") or []) == proposed
                 and v["verdict"] != "skipped"]
        if len(stack) == 1 and found:
            decision.update(judge_single(summary, found, metric, stack[0]))
        elif len(stack) > 1 and found:
            decision.update(judge_stack(summary, stacks, found, metric, stack, left_out))
        notes += unmeasured_notes(stacks, found, decision["search"], proposed)
    elif stacks:
        decision.update(verify_stack(summary, stacks, merged, metric))
    left_out.sort(key=lambda e: (WHY_ORDER.index(e["why"]) if e["why"] in WHY_ORDER else -1, e["id"]))
    return _proposal(summary, merged, decision, proposed, left_out, notes)


def _recommended_launch(summary, merged, baselines, decision, notes):
    """(host, flags, env, argv) of the recommended configuration: the baseline's launch on the host that measured
    it, with the stack's changes; what cannot be shown (secrets, a command that cannot be rebuilt) is added to
    `notes`."""
    measured, stack, ids, changes = decision["measured"], decision["stack"], decision["ids"], decision["changes"]
    hosts_of = (measured or {}).get("hosts") if decision["outcome"] in ("stack",) and measured else None
    host = (hosts_of or [None])[0] or (stack[0]["host"] if stack else (sorted(baselines) or [None])[0])
    base_cell = merged.get((host, BASELINE)) or {}
    base_launch = launch_details(base_cell)
    flags = dict(base_launch.get("flags") or {})
    env = dict(base_launch.get("env") or {})
    if ids:
        flags.update(changes["flags"])
        env.update({k: v for k, v in changes["env"].items() if v is not None})
        for name in [k for k, v in changes["env"].items() if v is None]:
            env.pop(name, None)
    secret = sorted(k for k, v in env.items() if v == REDACTED)
    env = {k: v for k, v in env.items() if v != REDACTED}
    argv, no_command = stacked_launch(base_cell, flags, summary.get("engine"), summary.get("engine_version")) \
        if base_cell else (None, "no baseline was measured")
    if len({h for c in stack for h in c["hosts"]}) > 1:
        notes.append("the candidates were measured on different hosts (%s), each against its own host's baseline; "
                     "the inventory variables and command are those of %s" % (
                         ", ".join(sorted({h for c in stack for h in c["hosts"]})), host))
    if secret:
        notes.append("secret environment left out (set it from your vault): %s" % ", ".join(secret))
    if no_command:
        notes.append(no_command)
    return host, flags, env, argv


def _proposal(summary, merged, decision, proposed, left_out, notes):
    """recommended.yml's content, in its order."""
    settings = summary.get("settings") or {}
    baselines = {v["host"]: v for v in summary["variants"] if v["variant"] == BASELINE}
    host, flags, env, argv = _recommended_launch(summary, merged, baselines, decision, notes)
    ids, search = decision["ids"], decision["search"]
    verify_variant = as_variant(ids, decision["changes"], "Recommended by campaign %s: %s" % (
        summary.get("campaign"), " + ".join(ids)), {"verifies": summary.get("campaign")}) if ids else None
    return {
        "status": decision["status"],
        "outcome": decision["outcome"],
        "campaign": summary.get("campaign"),
        "verifies": decision["verifies"],
        "engine": summary.get("engine"),
        "engine_version": summary.get("engine_version"),
        "verdict_metric": settings.get("verdict_metric", "output_throughput"),
        "confidence": settings.get("confidence"),
        "min_effect_pct": settings.get("min_effect_pct"),
        "slo": settings.get("slo") or {},
        "stack": list(ids),
        "proposed_stack": proposed,
        "host": host,
        "inventory": {"campaign_server_flags": flags, "campaign_server_env": env},
        "launch": {"argv": argv, "command": shlex.join(str(a) for a in argv) if argv else None, "env": dict(env)},
        "measured": decision["measured"],
        "baseline": {"host": host, "capacity": capacity_brief((baselines.get(host) or {}).get("capacity"))},
        "candidates": [{k: c[k] for k in ("id", "title", "hosts", "flags", "env", "gain", "levels", "capacity",
                                          "verdict_reason")} for c in decision["stack"]],
        "left_out": left_out,
        "notes": notes,
        "stacked_variant": decision["stacked_variant"],
        "verify_variant": verify_variant,
        "search": None if search is None else {k: v for k, v in search.items() if k != "kept_found"},
    }


def write_recommendation(campaign_dir, proposal):
    """results/<id>/recommended.yml, opening with what it is; returns its path."""
    path = campaign_dir / "recommended.yml"
    header = "# fleetopt recommendation of campaign %s: %s\n" % (proposal.get("campaign"), proposal["status"])
    if proposal["status"] == STATUS_PROPOSED:
        header += ("# Each candidate was measured alone against the baseline; the stack of them has not been measured "
                   "as one launch (-e recommend=true measures it).\n")
    elif proposal.get("measured"):
        gain = proposal["measured"]["gain"]
        header += "# The stack was measured against %s: %s %s%s%s.\n" % (
            proposal["measured"]["against"], gain["metric"], effect_text(gain),
            " [%s, %s]" % (shown_pct(gain["ci_low_pct"]), shown_pct(gain["ci_high_pct"]))
            if gain.get("ci_low_pct") is not None else "", "" if gain.get("concurrency") is None else " at c=%s" % gain["concurrency"])
    write_atomically(path, header + yaml.safe_dump(proposal, sort_keys=False, default_flow_style=False, width=100))
    return path
