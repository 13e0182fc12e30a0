# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Board power sampled with nvidia-smi while a benchmark runs (stdlib only).

One `nvidia-smi --query-gpu=index,<field> -lms <interval>` process samples every GPU of the host
for the whole module call; each line is stamped with the time it was read. A measured run's
power is the mean of the samples inside its measured window (the client's own duration, ending
when the run ended), so its warm-ups and the idle time between runs are not counted.

`power.draw.instant` is the board's power at the moment of the sample. `power.draw`, the fallback
for drivers without it, is a one-second average on Ampere and newer (nvidia-smi --help-query-gpu),
so it lags a change of load by about a second.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess
import threading
import time

POWER_FIELDS = ("power.draw.instant", "power.draw")
# Fewer samples than this per GPU in a run's window make no mean worth recording.
MIN_SAMPLES = 3


def parse_power_line(line):
    """'0, 712.34' (csv,noheader,nounits) -> (0, 712.34); None for anything else ('[N/A]', errors)."""
    cols = [c.strip() for c in (line or "").split(",")]
    if len(cols) != 2 or not cols[0].isdigit():
        return None
    try:
        return int(cols[0]), float(cols[1])
    except ValueError:
        return None


def _query(nvidia_smi, field, timeout=30):
    try:
        out = subprocess.run([nvidia_smi, "--query-gpu=index," + field, "--format=csv,noheader,nounits"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    text = out.stdout.decode("utf-8", "replace")
    readings = [parse_power_line(line) for line in text.splitlines()]
    if out.returncode == 0 and readings and all(readings):
        return readings, None
    return None, text.strip().splitlines()[-1] if text.strip() else "exit code %d" % out.returncode


def power_field(nvidia_smi):
    """(field, None) for the first of POWER_FIELDS this host's nvidia-smi reads on every GPU, else (None, why)."""
    why = None
    for field in POWER_FIELDS:
        readings, why = _query(nvidia_smi, field)
        if readings:
            return field, None
    return None, why


def window_power(samples, start, end):
    """The board power in [start, end] from [(time, gpu, watts)]: per-GPU means, their sum, the
    energy over the window, or the reason there is none."""
    by_gpu = {}
    for at, gpu, watts in samples:
        if start <= at <= end:
            by_gpu.setdefault(gpu, []).append(watts)
    if not by_gpu or min(len(v) for v in by_gpu.values()) < MIN_SAMPLES:
        return {"status": "too_few_samples", "samples": sum(len(v) for v in by_gpu.values()),
                "reason": "fewer than %d power samples per GPU in the %.2f s measured" % (MIN_SAMPLES, end - start)}
    means = dict((str(gpu), round(sum(v) / len(v), 2)) for gpu, v in sorted(by_gpu.items()))
    total = sum(sum(v) / len(v) for v in by_gpu.values())
    return {"status": "ok", "samples": sum(len(v) for v in by_gpu.values()), "gpu_mean_w": means,
            "board_power_w": round(total, 2), "energy_j": round(total * (end - start), 1)}


class PowerSampler:
    """Samples every GPU's board power from start() to stop(), in a thread that reads nvidia-smi."""

    def __init__(self, nvidia_smi="nvidia-smi", interval_ms=200, clock=time.time):
        self.nvidia_smi = nvidia_smi
        self.interval_ms = interval_ms
        self.clock = clock
        self.field = None
        self.why_not = None
        self.samples = []
        self.proc = None
        self.reader = None

    def start(self):
        """True when sampling; else `why_not` says why (no nvidia-smi, no power reading)."""
        self.field, self.why_not = power_field(self.nvidia_smi)
        if self.field is None:
            return False
        self.proc = subprocess.Popen(
            [self.nvidia_smi, "--query-gpu=index," + self.field, "--format=csv,noheader,nounits",
             "-lms", str(int(self.interval_ms))],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        self.reader = threading.Thread(target=self._read, name="power-sampler")
        self.reader.daemon = True
        self.reader.start()
        return True

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            reading = parse_power_line(raw.decode("utf-8", "replace"))
            if reading is not None:
                self.samples.append((self.clock(), reading[0], reading[1]))

    def window(self, start, end):
        """window_power over this sampler's samples, with what was sampled; None when not sampling."""
        if self.field is None:
            return None
        found = window_power(list(self.samples), start, end)
        found.update(field=self.field, interval_ms=self.interval_ms)
        return found

    def description(self):
        if self.field is None:
            return {"sampled": False, "reason": "no power reading from %s: %s" % (self.nvidia_smi, self.why_not)}
        return {"sampled": True, "tool": self.nvidia_smi, "field": self.field, "interval_ms": self.interval_ms,
                "gpus": sorted(set(sample[1] for sample in self.samples))}

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        self.proc.stdout.close()
