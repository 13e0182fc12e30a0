# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The small interface every inference-engine adapter implements.

An adapter knows how to launch its server for a variant (flags and
environment), how to ask whether it is healthy, how to run the engine's own
benchmark client offline, and how to turn that client's output into the
normalized metrics every report uses. Phase patterns and failure signatures are
data (`library/engines/<engine>.yml`), consumed by `fleetopt_logwatch`.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re
import subprocess

from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_effective

# Every engine's benchmark output is reduced to these keys (missing ones are None).
METRIC_KEYS = (
    "completed", "failed", "duration_s",
    "request_throughput", "output_throughput", "total_throughput",
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
    "mean_itl_ms", "median_itl_ms", "p99_itl_ms",
    "mean_e2e_latency_ms", "p99_e2e_latency_ms",
    # Requests per second that met every per-request SLO the client was given (its own goodput
    # option); None where the client has none or no SLO was set.
    "request_goodput",
)

# The service-level objectives a campaign may set (campaign_slo), in fleetopt's metric names: a
# level meets them when each of these p99 figures is at or under its limit in milliseconds.
SLO_KEYS = ("p99_ttft_ms", "p99_tpot_ms", "p99_itl_ms")

# A name part that marks a secret: HF_TOKEN, --api-key, PROXMOX_TOKEN_SECRET; not --tokenizer.
SECRET_NAME = re.compile(r"(?i)(^|[-_])(token|secret|password|passwd|credentials?|api[-_]?key|access[-_]?key)($|[-_])")
REDACTED = "<redacted>"


class BenchmarkFailed(Exception):
    """The benchmark ran but produced no usable measurement."""


def merge_flags(*layers):
    """Merge flag mappings left to right; a later value of None or False removes the flag."""
    merged = {}
    for layer in layers:
        for name, value in (layer or {}).items():
            if value is None or value is False:
                merged.pop(name, None)
            else:
                merged[name] = value
    return merged


def render_flags(flags):
    """`{'--a': True, '--b': 4, '--c': [1, 2]}` -> ['--a', '--b', '4', '--c', '1', '2']."""
    argv = []
    for name, value in flags.items():
        if not name.startswith("-"):
            raise ValueError("flag %r must start with '-'" % name)
        if value is True:
            argv.append(name)
        elif isinstance(value, (list, tuple)):
            argv.append(name)
            argv.extend(str(v) for v in value)
        elif isinstance(value, dict):
            argv.extend([name, json.dumps(value, sort_keys=True)])
        else:
            argv.extend([name, str(value)])
    return argv


def redact_argv(argv, secrets):
    """Replace every secret value (and the value after a secret-named flag) in argv."""
    out = []
    hide_next = False
    for item in argv:
        if hide_next or any(s and s in item for s in secrets):
            out.append(REDACTED)
        else:
            out.append(item)
        hide_next = item.startswith("--") and bool(SECRET_NAME.search(item.lstrip("-")))
    return out


def redact_env(env):
    return {k: (REDACTED if SECRET_NAME.search(k) else v) for k, v in (env or {}).items()}


def config_hash(argv, env, secret_names=(), secrets=()):
    """Stable identity of a launch: same argv and environment, same server.

    Secret values never enter it (a hash of a short key can be reversed by trying keys):
    secret values in argv are redacted first, and secret environment counts by name only.
    """
    blob = json.dumps({"argv": redact_argv(argv, secrets), "env": dict(sorted((env or {}).items())),
                       "secret_env": sorted(secret_names)}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def scrub_failure(failure, secrets):
    """Every text of a failure, with secrets replaced: evidence quotes log lines, a root cause
    may quote an exception, and some engines log their arguments."""
    secrets = [s for s in secrets or [] if s]
    if not failure or not secrets:
        return failure

    def scrub(value):
        if isinstance(value, dict):
            return dict((k, scrub(v)) for k, v in value.items())
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, str):
            for secret in secrets:
                value = value.replace(secret, REDACTED)
        return value

    return scrub(failure)


class EngineAdapter:
    """Base class; subclasses set `name`, `distributions` and the command builders."""

    name = None
    # Distribution names to ask importlib.metadata for, in order.
    distributions = ()
    health_path = "/health"
    # Environment variable the server reads its API key from; None passes it as --api-key.
    # An environment variable keeps the key out of logs that echo the command line.
    api_key_env = None

    # Launch flags that set each parallelism degree (reports): {'tp'|'dp'|'pp'|'ep': spellings}.
    parallelism_flags = {}
    # Client flags that name a run's own files or differ per concurrency level (reports drop them).
    per_run_client_flags = ("max-concurrency", "num-prompts")

    def __init__(self, version=None, model=None):
        self.version = version
        # What fleetopt_plan read from the model's config.json (architecture, mla, dsa, multimodal, ...);
        # empty where unknown: the adapter then assumes nothing about the model.
        self.model = dict(model or {})

    def parallelism(self, flags):
        """Degrees of parallelism a launch's flags ask for; 1 where a flag is absent or not a number."""
        found = {"tp": 1, "dp": 1, "pp": 1, "ep": 1}
        for field, spellings in self.parallelism_flags.items():
            for spelling in spellings:
                if spelling in flags:
                    try:
                        found[field] = max(int(flags[spelling]), 1)
                    except (TypeError, ValueError):
                        pass
                    break
        return found

    def benchmark_tool(self, client_argv):
        """The benchmark client's name in reports: the module it runs with `-m`."""
        argv = [str(a) for a in client_argv or []]
        if "-m" in argv[:-1]:
            return argv[argv.index("-m") + 1]
        return "%s-benchmark" % self.name

    def detect_version(self, python, timeout=60):
        """Installed engine version in the interpreter `python`, or None if absent."""
        probe = (
            "import importlib.metadata as m, sys\n"
            "for d in sys.argv[1:]:\n"
            "    try:\n"
            "        print(m.version(d)); break\n"
            "    except m.PackageNotFoundError:\n"
            "        pass\n"
        )
        try:
            out = subprocess.run(
                [python, "-c", probe] + list(self.distributions),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        text = out.stdout.decode("utf-8", "replace").strip()
        return text.splitlines()[0] if out.returncode == 0 and text else None

    # -- per-variant checks (version-aware adapters override these) -----------
    def baseline_flags(self):
        """Flags a true baseline needs on the installed release.

        For example SGLang 0.5.10+ turns piecewise CUDA graphs on by default, so its
        baseline must switch them off for the comparison to mean anything.
        """
        return {}

    def normalize_flags(self, flags):
        """Rewrite catalog flags into the installed release's spelling."""
        return dict(flags)

    def unsupported_flags(self, flags):
        """[(flag, reason)] for flags the installed release does not accept.

        A variant with any of them is reported not_applicable and never launched.
        """
        return []

    # -- the configuration the server states it runs ---------------------------
    def effective_config(self, lines, spec, arguments=None):
        """{"settings", "source", "statements"}: what the server's log lines (and, where given, the resolved
        `arguments` its endpoint returned) state it runs, by the spec's `effective_config` section."""
        return fleetopt_effective.read_log(lines, spec, self.version, arguments, self.derive_effective)

    def server_info_path(self):
        """Path of the endpoint that returns the server's resolved arguments; None: the log only."""
        return None

    def derive_effective(self, settings):
        """Release-specific settings turned into the common keys (version-aware adapters override)."""
        return settings

    def effective_key(self, flag):
        """The effective setting a launch flag changes: `--mem-fraction-static` -> `mem_fraction_static`,
        `--no-enable-prefix-caching` -> `enable_prefix_caching`."""
        name = flag.lstrip("-")
        if name.startswith("no-"):
            name = name[len("no-"):]
        return name.replace("-", "_")

    def changed_keys(self, flags, baseline_flags):
        """The effective settings a variant sets out to change: those of the flags (as launched) whose value
        differs from the baseline's, in flag order."""
        keys = []
        for flag in sorted(set(flags or {}) | set(baseline_flags or {})):
            if (flags or {}).get(flag) != (baseline_flags or {}).get(flag):
                key = self.effective_key(flag)
                if key not in keys:
                    keys.append(key)
        return keys

    # -- commands --------------------------------------------------------------
    def server_command(self, python, model, served_model_name, host, port, flags):
        raise NotImplementedError

    def server_env(self, env):
        return dict(env or {})

    def bench_command(self, python, base_url, served_model_name, tokenizer, concurrency,
                      num_prompts, input_len, output_len, seed, result_path, extra_args=None, warmups=0):
        """The client command for one measured run.

        `warmups` requests are sent by the same client process right before the measured
        ones, at the same concurrency limit, and are excluded from its statistics.
        """
        raise NotImplementedError

    def bench_env(self):
        return {}

    def bench_preload_modules(self):
        """The modules whose import makes most of the client's start, which a kept client started ahead of
        the first run imports in the background (while a server starts); none by default."""
        return ()

    # SLO key (SLO_KEYS) -> the client's own goodput key, for the SLOs its goodput option can count
    # per request; empty where the client has no goodput option.
    goodput_keys = {}
    goodput_option = "--goodput"

    def goodput_supported(self):
        """Whether the installed release's client has its goodput option (version-aware adapters override)."""
        return bool(self.goodput_keys)

    def goodput_covers(self, slo):
        """The SLO keys of `slo` that the client's goodput counts, in SLO_KEYS order."""
        if not self.goodput_supported():
            return []
        return [key for key in SLO_KEYS if key in self.goodput_keys and (slo or {}).get(key) is not None]

    def goodput_args(self, slo):
        """Client arguments that make it count goodput under `slo` ({} or None: none)."""
        covered = self.goodput_covers(slo)
        if not covered:
            return []
        return [self.goodput_option] + ["%s:%g" % (self.goodput_keys[key], float(slo[key])) for key in covered]

    def parse_bench_result(self, path):
        raise NotImplementedError

    # -- shared helpers ------------------------------------------------------
    @staticmethod
    def normalized(raw, mapping):
        """Pick METRIC_KEYS out of `raw` using `mapping` {our_key: their_key}."""
        metrics = {}
        for key in METRIC_KEYS:
            source = mapping.get(key, key)
            value = raw.get(source) if source else None
            metrics[key] = float(value) if isinstance(value, (int, float)) else None
        if not metrics.get("completed"):
            raise BenchmarkFailed(
                "the benchmark completed no request (completed=%s, failed=%s)"
                % (raw.get("completed"), raw.get("failed"))
            )
        return metrics
