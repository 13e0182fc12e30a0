"""The variants a recommendation hands to the next campaign (catalog entries fleetopt_plan takes: the stack to
measure, the configuration to verify) and the launch command of the recommended configuration."""
from fleetopt.analysis.launches import launch_details
from fleetopt.analysis.summary import BASELINE
from fleetopt.recommend.candidates import STACK_VARIANT

# Makes the collection's module_utils importable.
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import REDACTED, merge_flags, render_flags
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter


def stage_baseline_id(variant_id):
    """The baseline a stack stage measures again beside `variant_id` (fleetopt_plan plans it just before it)."""
    return "%s_%s" % (BASELINE, variant_id)


def stacked_launch(baseline_cell, flags, engine, engine_version):
    """(argv, None) of the stacked launch: the baseline's command with the stack's flags; (None, why) when the
    baseline's command does not end in its own flags as the adapter renders them."""
    details = launch_details(baseline_cell)
    argv, base_flags = details.get("argv") or [], details.get("flags") or {}
    tail = render_flags(base_flags)
    if not argv or (tail and argv[-len(tail):] != tail):
        return None, "the baseline's recorded command does not end in its flags; build it from the inventory variables"
    try:
        adapter = get_adapter(engine, engine_version)
    except (KeyError, ValueError) as exc:
        return None, "no adapter for engine %r (%s); build the command from the inventory variables" % (engine, exc)
    prefix = argv[:len(argv) - len(tail)] if tail else list(argv)
    return prefix + render_flags(adapter.normalize_flags(merge_flags(flags))), None


def as_variant(ids, changes, title, stacked, variant_id=STACK_VARIANT):
    """A catalog entry (what fleetopt_plan takes) that measures `changes` against the baseline."""
    return {"id": variant_id, "title": title, "tier": 0, "flags": dict(changes["flags"]),
            "env": {k: v for k, v in changes["env"].items() if v != REDACTED},
            "stacked": dict(stacked, composes=list(ids))}


def stage_variant(ids, changes, title, stacked, variant_id=STACK_VARIANT):
    """A stacked variant measured after the matrix: its stage measures the baseline again beside it, under the name
    `baseline` gives (a verifying campaign has no matrix: its baseline is measured in the same stage)."""
    return as_variant(ids, changes, title, dict(stacked, baseline=stage_baseline_id(variant_id)), variant_id)


def union(parts):
    changes = {"flags": {}, "env": {}}
    for part in parts:
        changes["flags"].update(part["flags"])
        changes["env"].update(part["env"])
    return changes
