#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleetopt_cell
short_description: Write a campaign cell's result on the controller, atomically
description:
  - Writes O(content) as JSON to O(dest) on the controller through a temporary file and a
    rename, so a reader never sees half a cell and an interrupted campaign keeps every cell
    already written.
  - This is an action plugin; it runs on the controller whatever host the task targets, and
    costs no connection or module run.
version_added: "0.1.0"
author: fleetopt contributors (@fleetopt)
options:
  dest:
    description: Path of the cell file on the controller; parent folders are created.
    type: path
    required: true
  content:
    description: The cell.
    type: dict
    required: true
attributes:
  check_mode:
    support: full
    description: Says which file it would write and writes nothing.
  diff_mode:
    support: none
    description: Reports no differences; the result says what changed.
"""

EXAMPLES = r"""
- name: Write the cell of the baseline
  fleetopt.campaign.fleetopt_cell:
    dest: "{{ playbook_dir }}/results/{{ campaign_id }}/cells/{{ inventory_hostname }}/baseline.json"
    content: "{{ _campaign_cell }}"
"""

RETURN = r"""
dest:
  description: The file written.
  returned: always
  type: str
  sample: /srv/fleetopt/results/20261129T091500Z/cells/gpu1/baseline.json
"""

from ansible.module_utils.basic import AnsibleModule


def module_args():
    return dict(dest=dict(type="path", required=True), content=dict(type="dict", required=True))


def main():
    # Only reached when the action plugin is bypassed; it must run on the controller.
    module = AnsibleModule(argument_spec=module_args(), supports_check_mode=True)
    module.fail_json(msg="fleetopt_cell runs as an action plugin on the controller; check action_plugins in ansible.cfg")


if __name__ == "__main__":
    main()
