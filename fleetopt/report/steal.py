"""The CPU time that hosts' hypervisors gave other guests while the benchmark ran (steal), as the
report states it: on a shared virtual machine a run that lost CPU this way is slower for a reason
no variant caused, so the runs that lost much are named."""
from statistics import median

# A run that lost this share of its host's CPU time or more is named in the report.
STOLEN_SHARE = 0.05


def run_label(cell, level, hosts):
    where = "%s on %s" % (cell["variant"], cell.get("host")) if len(hosts) > 1 else cell["variant"]
    return "%s launch %s c=%s trial %s" % (where, cell.get("launch_number") or 1, level.get("concurrency"),
                                           level.get("trial"))


def steal_text(cells):
    """A sentence for the reports' campaign facts."""
    hosts = {c.get("host") for c in cells}
    runs = [(level["host_steal_share"], run_label(cell, level, hosts)) for cell in cells
            for level in cell.get("levels") or [] if level.get("host_steal_share") is not None]
    if not runs:
        return "CPU stolen by the hypervisor: not recorded (no host said, or the cells predate the record)"
    shares = [run[0] for run in runs]
    if not any(shares):
        return "CPU stolen by the hypervisor: none in any of the %d runs" % len(runs)
    most, where = max(runs)
    text = "CPU stolen by the hypervisor (its other guests) during the runs: median %.1f %%, most %.1f %% (%s)" % (
        median(shares) * 100, most * 100, where)
    stolen = sorted(label for share, label in runs if share >= STOLEN_SHARE)
    if stolen:
        text += "; %d of %d runs lost %.0f %% or more of the host's CPU, which slows a run for a reason no variant " \
                "caused: %s" % (len(stolen), len(runs), STOLEN_SHARE * 100, ", ".join(stolen))
    return text
