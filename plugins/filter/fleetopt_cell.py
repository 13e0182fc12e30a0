# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter `fleetopt_cell_outcome`: a campaign cell's status, reason and failure, decided from
the registered results of the variant's tasks (the campaign role's cell.json.j2 only shapes the
cell around it).

    {{ _campaign_variant | fleetopt_cell_outcome(_campaign_server, _campaign_bench | default(none),
                                                  _campaign_post_mortem | default(none), 900) }}
    -> {'status': 'ok', 'reason': None, 'failure': None, 'host_lost': False}

Filter `fleetopt_cell_kept`: whether a resumed campaign keeps a cell it already wrote (complete for
the same configuration; one of a pair only with the other, see its docstring).

    {{ _campaign_previous | fleetopt_cell_kept(_campaign_cell_key, _campaign_partner_previous) }}

Filter `fleetopt_no_effect`: why a ready variant's server changed nothing against its baseline's (the effective
configurations both servers stated, fleetopt_server's `server.effective`), or '' where it changed something or
nothing can be said; such a variant is not benchmarked and its cell is `no_effect` with that reason.

    {{ _campaign_variant | fleetopt_no_effect(_campaign_server, _campaign_effective | default({}), 'sglang') }}

Filter `fleetopt_effective_comparison`: the comparison behind it, kept in the cell (`launch.vs_baseline`): what the
variant changed, and what else its server ran differently from its baseline's.

Filter `fleetopt_cell_files`: the files on its host that a cell names - the server log, and the result file and
raw output of every run of the benchmark client (warm-up runs, a trial's short warm-up, the trials) - which the
campaign brings to the controller.

    {{ _campaign_cell | fleetopt_cell_files }}
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_effective import compare, no_effect_reason

# What a cell that measured everything it could ends as; any other status, or a failed level, is measured again.
COMPLETE = ("ok", "blocked", "not_applicable", "no_effect")
BASELINES = ("baseline", "baseline_aa")
REMEDY_UNREACHABLE = ("Bring the host back and run the campaign again with the same campaign id; "
                      "finished cells are kept.")


def ran(result):
    """A registered result, or {} for a task that was skipped or never reached."""
    if not isinstance(result, dict) or result.get("skipped"):
        return {}
    return result


def failure(failure_class, root_cause, remedy, phase=None):
    return {"failure_class": failure_class, "verdict": "error", "root_cause": root_cause, "remedy": remedy,
            "phase": phase, "evidence": [], "also_seen": []}


def fleetopt_effective_comparison(variant, server_result=None, effective_by_variant=None):
    """What the ready server of `variant` stated against its baseline's server (fleetopt_effective.compare: the
    settings it changed, those it set out to change but did not, and what else differs), or None where either side
    stated nothing. `effective_by_variant` maps the variants this host ran before to what their servers stated; the
    reference is the variant's own baseline (a stack's stage baseline, else `baseline`)."""
    server = ran(server_result).get("server") or {}
    if (not variant.get("applicable") or server.get("status") != "ready" or variant.get("id") in BASELINES
            or variant.get("baseline_of")):
        return None
    reference = (variant.get("stacked") or {}).get("baseline") or "baseline"
    baseline = ((effective_by_variant or {}).get(reference) or {}).get("settings")
    settings = (server.get("effective") or {}).get("settings")
    if not baseline or not settings:
        return None
    return dict(compare(settings, baseline, variant.get("changes") or []), baseline_variant=reference)


def fleetopt_no_effect(variant, server_result=None, effective_by_variant=None, engine=None):
    """'' or the reason the ready server of `variant` ran its baseline's values on every setting the variant set out
    to change (`changes`)."""
    comparison = fleetopt_effective_comparison(variant, server_result, effective_by_variant)
    if not comparison or comparison["state"] != "no_effect":
        return ""
    effective = ran(server_result)["server"]["effective"]
    return no_effect_reason(effective, variant.get("changes") or [], comparison, engine)


def fleetopt_cell_outcome(variant, server_result=None, bench_result=None, post_mortem_result=None,
                          bench_level_timeout=None, no_effect=None):
    server_result, bench, post = ran(server_result), ran(bench_result), ran(post_mortem_result)
    server = server_result.get("server") or {}
    lost = [r for r in (server_result, bench, post) if r.get("unreachable")]
    outcome = {"status": None, "reason": None, "failure": None, "host_lost": bool(lost)}
    if not variant.get("applicable"):
        outcome.update(status="not_applicable", reason=variant.get("reason"))
    elif lost:
        reason = "host unreachable: %s" % lost[0].get("msg", "no answer")
        outcome.update(status="error", reason=reason,
                       failure=failure("host_unreachable", reason, REMEDY_UNREACHABLE, server.get("phase")))
    elif bench and (bench.get("failed") or "levels" not in bench):
        # failed_when: false hides a module failure (e.g. the host went away under it, rc 137).
        reason = "the benchmark module failed (rc %s): %s" % (bench.get("rc", "?"), bench.get("msg", ""))
        outcome.update(status="error", reason=reason,
                       failure=failure("benchmark_error", reason, "Read the raw benchmark output fetched beside this cell."))
    elif bench.get("server_died"):
        outcome.update(status="crashed", failure=(post.get("server") or {}).get("failure"))
    elif bench.get("timed_out"):
        outcome.update(status="timeout", reason=(
            "a benchmark run did not finish within %s s (campaign_bench_level_timeout); the server was stopped "
            "and the runs left were skipped" % bench_level_timeout))
    elif server.get("status") == "ready" and no_effect:
        # Not benchmarked: the same configuration as its baseline's would only measure the host's noise.
        outcome.update(status="no_effect", reason=no_effect)
    elif server.get("status") == "ready":
        outcome.update(status="ok")
    else:
        outcome.update(status=server.get("status") or "error", failure=server.get("failure"),
                       reason=server_result.get("msg"))
        if outcome["status"] == "timeout" and variant.get("startup_timeout") is not None:
            # Variants have deadlines of their own: say which one ran out, and which setting raises it.
            outcome["reason"] = "%s; start-up deadline %.0f s (%s)" % (
                outcome["reason"] or "not ready in time", float(variant["startup_timeout"]),
                variant.get("startup_timeout_from") or "campaign_startup_timeout")
    return outcome


def complete(cell):
    return (isinstance(cell, dict) and cell.get("status") in COMPLETE
            and all(level.get("status") == "ok" for level in cell.get("levels") or []))


def fleetopt_cell_kept(previous, cell_key, partner=None):
    """Whether `previous` (this variant and launch's cell, {} when none) is kept: complete for the same configuration.
    A stack and the baseline measured again beside it are a pair (`partner`: the other's cell of the same launch, {}
    when none; None for a variant of no pair): each is kept only when the other is complete too, so a stage resumed
    after an interruption measures both again rather than one beside a cell of another session."""
    if not complete(previous) or previous.get("cell_key") != cell_key:
        return False
    return partner is None or complete(partner)


def raw_output(result_file):
    """The client's stdout and stderr, written beside its result file (fleetopt_bench)."""
    return result_file[:-len(".json")] + ".out" if result_file.endswith(".json") else result_file + ".out"


def fleetopt_cell_files(cell):
    """The host paths a cell names: its server log, then each client run's result file and raw output - the warm-up
    runs until settled, then each trial's short warm-up run and the trial."""
    paths = [(cell.get("startup") or {}).get("log_path")]
    runs = [run for level in (cell.get("benchmark") or {}).get("warmup") or [] for run in level.get("runs") or []]
    for level in cell.get("levels") or []:
        runs += [level.get("warmup_run") or {}, level]
    for run in runs:
        if run.get("result_file"):
            paths += [run["result_file"], raw_output(run["result_file"])]
    return [path for path in paths if path]


class FilterModule:
    def filters(self):
        return {"fleetopt_cell_outcome": fleetopt_cell_outcome, "fleetopt_cell_kept": fleetopt_cell_kept,
                "fleetopt_cell_files": fleetopt_cell_files, "fleetopt_no_effect": fleetopt_no_effect,
                "fleetopt_effective_comparison": fleetopt_effective_comparison}
