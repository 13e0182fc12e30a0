# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options several fleetopt modules share, documented once.

Their argument spec is module_utils/fleetopt_common.py, whose engine choices are the engine
registry's (module_utils/fleetopt_engines.py). The texts here must be plain strings (ansible-test
reads them without running this file), so the choices are written out;
tests/unit/plugins/module_utils/test_engine_registry.py checks them against the registry.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  python:
    description:
      - Interpreter of the engine's virtual environment (the benchmark client ships with the engine).
      - C(fleetopt.campaign.fleetopt_bench) needs it unless it only releases its kept client.
    type: path
  engine_version:
    description:
      - Installed engine release (as C(fleetopt_plan) reports it), so the engine is called the way that release
        expects - the launch command is rendered for it, and the benchmark client called as it expects (SGLang
        moved its benchmark to C(sglang.benchmark.serving) in 0.5.15).
      - Omit to render release-independent commands.
    type: str
  api_key:
    description:
      - API key of the server - C(fleetopt.campaign.fleetopt_server) starts it requiring this key (C(--api-key)),
        and C(fleetopt.campaign.fleetopt_bench)'s client sends it. Never logged.
    type: str
  nvidia_smi:
    description:
      - The C(nvidia-smi) program on the host. C(fleetopt.campaign.fleetopt_server) checks the GPUs' memory with it
        (where it does not exist, GPU memory is not checked).
      - C(fleetopt.campaign.fleetopt_bench) samples every GPU's board power with it while the benchmark runs
        (C(power.draw.instant), else C(power.draw)); each measured run records the mean over its measured window and
        the output tokens per joule. A host without it (or without power readings) is benchmarked without power,
        and the result says why.
    type: str
    default: nvidia-smi
  lease_s:
    description:
      - Seconds the server may run without hearing from fleetopt. Every call of C(fleetopt.campaign.fleetopt_server)
        renews its lease for this long, and so does C(fleetopt.campaign.fleetopt_bench), given the server's
        C(lease_path), while it benchmarks; when the lease runs out the supervisor stops the server and records
        why. C(0) means no lease (no renewal, for the benchmark).
    type: float
    default: 0
"""

    ENGINE = r"""
options:
  engine:
    description:
      - Engine adapter - how to launch the engine, read it and benchmark it with its own client.
      - The choices are the adapters registered in C(plugins/module_utils/fleetopt_engines.py).
    type: str
    choices: [sglang, vllm]
"""
