# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Engine name -> adapter."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_sglang import SglangAdapter
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_vllm import VllmAdapter

ADAPTERS = {adapter.name: adapter for adapter in (SglangAdapter, VllmAdapter)}


def get_adapter(name, version=None, model=None):
    try:
        return ADAPTERS[name](version, model)
    except KeyError:
        raise ValueError("unknown engine %r; known: %s" % (name, ", ".join(sorted(ADAPTERS))))
