# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter `fleetopt_version_in_range`: PEP 440 version ranges for roles, with the same code
the modules use (plugins/module_utils/fleetopt_versions.py).

    {{ '0.5.10rc1' | fleetopt.campaign.fleetopt_version_in_range('>=0.5.4,<0.5.10') }}  ->  false
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_versions


def fleetopt_version_in_range(version, spec):
    """Whether `version` satisfies the PEP 440 range `spec` (comma-separated clauses), answered
    as packaging's SpecifierSet(spec).contains(version, prereleases=True)."""
    try:
        return fleetopt_versions.version_in_range(version, spec)
    except ValueError as exc:
        raise AnsibleFilterError("fleetopt_version_in_range(%r, %r): %s" % (version, spec, exc))


class FilterModule:
    def filters(self):
        return {"fleetopt_version_in_range": fleetopt_version_in_range}
