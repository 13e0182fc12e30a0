#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only module: which Python runs fleetopt's modules on a host, and what it can import.

It ships and imports fleetopt's own module_utils like the real modules do, then tries imports
that exist only in the controller's venv (ansible_runner, yaml, the fleetopt package).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import socket
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import port_in_use

CONTROLLER_ONLY = ("ansible_runner", "yaml", "fleetopt")


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    imports = {}
    for name in CONTROLLER_ONLY:
        try:
            importlib.import_module(name)
            imports[name] = "ok"
        except ImportError as exc:
            imports[name] = "%s: %s" % (type(exc).__name__, exc)
    module.exit_json(changed=False, executable=sys.executable, version=list(sys.version_info[:3]),
                     prefix=sys.prefix, hostname=socket.gethostname(), imports=imports,
                     port_8700_in_use=port_in_use(8700))


if __name__ == "__main__":
    main()
