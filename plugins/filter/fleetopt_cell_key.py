# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter `fleetopt_cell_key`: the key of a cell's configuration, which a resumed campaign compares to keep a cell.

    {{ {'engine': ..., 'benchmark': {...}, 'placement': {...}, 'beside': {...}, ...} | fleetopt_cell_key }}
    -> 'a3f9...' (SHA-256, hex)

The campaign role only gathers the configuration; what enters the key is decided here. A setting added after
campaigns already kept cells enters the key only where it differs from the value those cells were measured with,
so their keys stay what they were and they are found when their campaign resumes.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json

# Benchmark settings added to the key later: the value every earlier cell was measured with.
BENCHMARK_SETTINGS_ADDED = {"min_warmups": 8, "warmup_output_len": 0}


def _sha256_of_json(value):
    """As Ansible's `to_json(sort_keys=true) | hash('sha256')` writes it."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def cell_key_parts(configuration):
    """The parts of the configuration that make the key (see the module's docstring)."""
    key = dict(configuration)
    spec = dict(key.pop("engine_spec", None) or {})
    # Where the compile caches live changes no result.
    spec.pop("compile_cache", None)
    key["engine_spec"] = _sha256_of_json(spec)
    benchmark = dict(key.get("benchmark") or {})
    for name, earlier in BENCHMARK_SETTINGS_ADDED.items():
        value = benchmark.pop(name, None)
        if value is not None and int(value) != earlier:
            benchmark[name] = int(value)
    key["benchmark"] = benchmark
    # The baseline measured again beside a stack is another configuration than the matrix's baseline.
    baseline_of = key.pop("baseline_of", None)
    beside = key.pop("beside", None)
    if baseline_of:
        key["beside"] = beside
    placement = key.pop("placement", None) or {}
    if placement.get("server") is not None or placement.get("client") is not None:
        key["placement"] = {"server": placement.get("server"), "client": placement.get("client")}
    return key


def fleetopt_cell_key(configuration):
    return _sha256_of_json(cell_key_parts(configuration))


class FilterModule:
    def filters(self):
        return {"fleetopt_cell_key": fleetopt_cell_key}
