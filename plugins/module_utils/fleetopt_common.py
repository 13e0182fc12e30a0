# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of the options several fleetopt modules share.

Documented once, in the doc fragment fleetopt.campaign.fleetopt_common
(plugins/doc_fragments/fleetopt_common.py): a module that takes these options extends that
fragment and builds its spec from here. The engine's choices are the engine registry's.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import ADAPTERS


def engine_argument_spec(required=False):
    """`engine`, one of the registered adapters (fragment fleetopt_common.engine; a module that requires it
    says so in its own options)."""
    spec = dict(type="str", choices=sorted(ADAPTERS))
    if required:
        spec["required"] = True
    return dict(engine=spec)


def common_argument_spec(engine_required=False):
    """`engine` and the engine's interpreter, release, API key, nvidia-smi and lease (fragment fleetopt_common)."""
    spec = engine_argument_spec(engine_required)
    spec.update(
        python=dict(type="path"),
        engine_version=dict(type="str"),
        api_key=dict(type="str", no_log=True),
        nvidia_smi=dict(type="str", default="nvidia-smi"),
        lease_s=dict(type="float", default=0.0),
    )
    return spec
