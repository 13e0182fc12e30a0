"""Replicates over server launches: several cells of one (host, variant), one per launch.

A cell carries `launch_number` (1-based) and `launches` (the total); a cell without them is
launch 1 of 1, so campaigns written before launches still summarize. `merge_launches` turns
the cells of one (host, variant) into one cell whose levels are every launch's levels, each
tagged with its launch, and whose status is:

- the first crashed / timeout / error launch's status, with its failure and reason;
- else ok when any launch is ok;
- else the first launch's status (skipped, blocked, not_applicable, ...).

`launch` is the description of the server's launch (argv, env, config hash).
"""
FAILED = ("crashed", "timeout", "error")


def launch_number(cell):
    value = cell.get("launch_number")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def launch_total(cell):
    value = cell.get("launches")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def launch_details(cell):
    """The server launch's description (argv, env, flags, config hash), or {}."""
    value = cell.get("launch")
    return value if isinstance(value, dict) else {}


def _merge(group):
    group = sorted(group, key=launch_number)
    failed = [c for c in group if c.get("status") in FAILED]
    ok = [c for c in group if c.get("status") == "ok"]
    decisive = failed[0] if failed else (ok[0] if ok else group[0])
    merged = dict(decisive)
    merged["levels"] = [dict(level, launch=launch_number(c)) for c in group for level in c.get("levels") or []]
    merged["launch_statuses"] = [{"launch": launch_number(c), "status": c.get("status"), "reason": c.get("reason")}
                                 for c in group]
    merged["launches"] = max([launch_total(c) for c in group] + [len(group)])
    return merged


def merge_launches(cells):
    """One cell per (host, variant), in the order of each group's first cell; levels tagged with launch."""
    groups = {}
    for cell in cells:
        groups.setdefault((cell.get("host"), cell["variant"]), []).append(cell)
    return [_merge(group) for group in groups.values()]


def campaign_design(cells):
    """The first `design` a cell carries (e.g. {"launches": 2, "order": "counterbalanced (ABBA)"})."""
    for cell in cells:
        if cell.get("design"):
            return cell["design"]
    return None


def describe_design(design):
    if not design:
        return None
    if isinstance(design, dict):
        return ", ".join("%s: %s" % (key, value) for key, value in design.items())
    return str(design)
