"""No silent no-ops: a variant whose server ran its baseline's configuration is not a comparison.

The campaign decides it on the host as soon as the variant's server is ready (the filter
fleetopt_no_effect: such a variant is not benchmarked and its cell is already `no_effect`); this is the
same check on the controller, for cells the host could not decide (its baseline's configuration was not
known there) and for every measured variant's record of what it changed.

Each cell records what its server stated it runs (`launch.effective.settings`, read by the engine adapter
from the server's own statements) and the settings the variant set out to change (`launch.changes`, from
its plan). Where the server stated its baseline's value for every one of them (the baseline of the same
host: the campaign's, or the one a stack's stage measured beside it), the variant is `no_effect`: it is
not compared with the baseline, whatever it measured, and its reason quotes the server's own words (the
warning lines of the rules that overrode the request) and the release. Every measured variant keeps the
comparison (`effective_comparison`): what it changed, and what else differs from its baseline.
"""
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_effective import compare, no_effect_reason

NO_EFFECT = "no_effect"
BASELINE = "baseline"
AA_VARIANT = "baseline_aa"


def _effective(cell):
    return (cell.get("launch") or {}).get("effective") or {}


def _reference(cell):
    return (cell.get("stacked") or {}).get("baseline") or BASELINE


def mark_no_effect(cells):
    """The cells, each measured variant's with its `effective_comparison`, and those that changed nothing as no_effect
    (status and verdict; what they measured is kept in `levels`, the status they had in `measured_status`)."""
    baselines = {}
    for cell in cells:
        if cell.get("variant") != AA_VARIANT and not cell.get("stacked") and _effective(cell).get("settings"):
            baselines.setdefault((cell["host"], cell["variant"]), cell)
    marked = []
    for cell in cells:
        keys = (cell.get("launch") or {}).get("changes") or []
        reference = baselines.get((cell.get("host"), _reference(cell)))
        if (cell.get("status") != "ok" or not keys or reference is None or cell.get("variant") in (BASELINE, AA_VARIANT)
                or cell.get("baseline_of")):
            marked.append(cell)
            continue
        baseline_settings = _effective(reference).get("settings") or {}
        comparison = compare(_effective(cell).get("settings"), baseline_settings, keys)
        cell = dict(cell, effective_comparison=comparison)
        if comparison["state"] == NO_EFFECT:
            cell.update(status=NO_EFFECT, measured_status=cell["status"],
                        reason=no_effect_reason(_effective(cell), keys, comparison, cell.get("engine")))
        marked.append(cell)
    return marked
