# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Atomic writes on the controller: the fleetopt_cell action plugin and the `fleetopt` package
(reports, summaries) both write through here, so a reader sees the old file or the new one,
never half of one."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile


def write_atomically(path, text):
    """Write `text` to `path` (parent folders created) through a temporary file and a rename."""
    path = os.fspath(path)
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_json_atomically(path, data):
    write_atomically(path, json.dumps(data, indent=2) + "\n")
