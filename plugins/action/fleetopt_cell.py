# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write one campaign cell on the controller, atomically, without a module round trip.

Cells are measured on the fleet but belong to the controller's results folder. Writing them
here, in the controller process, costs milliseconds instead of the second a delegated `copy`
takes, which is most of fleetopt's per-variant overhead.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_files import write_json_atomically


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _VALID_ARGS = frozenset(("dest", "content"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dest = self._task.args.get("dest")
        content = self._task.args.get("content")
        if not dest or not isinstance(content, dict):
            raise AnsibleActionFail("fleetopt_cell needs dest (a path) and content (a mapping)")
        dest = os.path.expanduser(dest)
        result.update(changed=True, dest=dest)
        if self._play_context.check_mode:
            result["msg"] = "would write %s" % dest
            return result
        try:
            write_json_atomically(dest, content)
        except (IOError, OSError) as exc:
            raise AnsibleActionFail("cannot write the cell %s: %s" % (dest, exc))
        return result
