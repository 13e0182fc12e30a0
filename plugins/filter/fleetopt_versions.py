# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter `fleetopt_version_in_range`: PEP 440 version ranges for roles, with the same code
the modules use (plugins/module_utils/fleetopt_versions.py).

    {{ '0.5.10rc1' | fleetopt_version_in_range('>=0.5.4,<0.5.10') }}  ->  false

The module_utils file is loaded by its path, relative to this plugin: on the controller,
`ansible.module_utils` does not include the project's module_utils folder (ansible.cfg's
`module_utils` setting only decides what ships with modules to hosts), so
`from ansible.module_utils.fleetopt_versions import ...` fails in a filter plugin and
ansible skips the plugin.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os

from ansible.errors import AnsibleFilterError


def _load_versions():
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "module_utils", "fleetopt_versions.py")
    spec = importlib.util.spec_from_file_location("_fleetopt_versions_for_filters", os.path.normpath(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fleetopt_versions = _load_versions()


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
