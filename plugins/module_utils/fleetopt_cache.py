# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compilation and JIT caches of an engine: one folder per host, shared by its variants.

Which environment variables point an engine's caches (torch inductor, Triton, FlashInfer
JIT, the engine's own compile cache, ...) at a folder is data: the `compile_cache` section
of `library/engines/<engine>.yml`::

    compile_cache:
      env:
        VLLM_CACHE_ROOT: vllm          # variable: its folder, relative to the cache folder
        TRITON_CACHE_DIR: triton

With the cache folder `D`, a `warm` launch points each variable at `D/<folder>`, kept from
one launch to the next; a `cold` launch points them at `D/.cold/<slot>/<folder>`, emptied
right before the launch (so the last cold launch's files stay until the next one, for a
look after a crash). Standard library only: this runs inside modules on target hosts.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil

MODES = ("warm", "cold")
COLD_FOLDER = ".cold"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FOLDER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$")
# Counting stops here: a number this large already says "warm".
MAX_COUNTED = 100000


def compile_cache_env(spec):
    """The `compile_cache` section of an engine spec, checked: {variable: folder}.

    Raises ValueError on a malformed section: folders must be relative, inside the cache
    folder (no `..`, no leading dot: `.cold` is fleetopt's), one variable per folder.
    """
    section = (spec or {}).get("compile_cache")
    if section is None:
        return {}
    if not isinstance(section, dict) or set(section) - {"env"}:
        raise ValueError("compile_cache must be a mapping with one key, env (variable: folder)")
    env = section.get("env") or {}
    if not isinstance(env, dict):
        raise ValueError("compile_cache.env must map environment variables to folders")
    owners = {}
    for name, folder in env.items():
        if not isinstance(name, str) or not ENV_NAME.match(name):
            raise ValueError("compile_cache.env: %r is not an environment variable name" % (name,))
        if not isinstance(folder, str) or not FOLDER.match(folder) or ".." in folder.split("/"):
            raise ValueError("compile_cache.env.%s: %r must be a relative folder inside the cache folder "
                             "(no '..', no leading dot or slash)" % (name, folder))
        if folder in owners:
            raise ValueError("compile_cache.env: %s and %s share the folder %r" % (owners[folder], name, folder))
        owners[folder] = name
    return dict(env)


def cache_root(cache_dir, mode, slot):
    """The folder the variables of one launch point into."""
    if mode not in MODES:
        raise ValueError("cache mode must be one of %s, not %r" % (", ".join(MODES), mode))
    if mode == "warm":
        return cache_dir
    return os.path.join(cache_dir, COLD_FOLDER, slot)


def plan(spec_env, cache_dir, mode, slot, user_env):
    """What a launch will use, without touching the disk.

    A variable the launch's own environment (`user_env`) already sets is left to it: it is
    listed in `user_env` and fleetopt creates no folder for it.
    """
    root = cache_root(cache_dir, mode, slot)
    env = {}
    kept = {}
    for name, folder in sorted(spec_env.items()):
        if name in (user_env or {}):
            kept[name] = str(user_env[name])
        else:
            env[name] = os.path.join(root, folder)
    return {"dir": cache_dir, "root": root, "mode": mode, "env": env, "user_env": kept}


def _files(paths):
    """The path of every file under the given folders (missing folders hold none)."""
    for path in sorted(set(paths)):
        for folder, _subfolders, files in os.walk(path):
            for name in files:
                yield os.path.join(folder, name)


def count_files(paths, limit=MAX_COUNTED):
    """Files under the given folders (missing folders count nothing)."""
    total = 0
    for _path in _files(paths):
        total += 1
        if total >= limit:
            return limit
    return total


def _makedirs_private(path):
    """Create `path` and its missing parents with mode 0700 (the umask cannot widen it)."""
    missing = []
    current = path
    while current and not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except OSError:
            if not os.path.isdir(folder):
                raise
        os.chmod(folder, 0o700)


def prepare(cache_plan, create=True):
    """Empty a cold root, create the folders (0700) and count what a warm start finds.

    Returns the plan with `entries_before`: the number of files in the variables' folders
    at launch (always 0 for a cold launch), and `start`: `cold` when they held none, else `warm`.
    """
    result = dict(cache_plan)
    if create:
        if cache_plan["mode"] == "cold" and os.path.isdir(cache_plan["root"]):
            shutil.rmtree(cache_plan["root"])
        for path in cache_plan["env"].values():
            _makedirs_private(path)
    result["entries_before"] = 0 if cache_plan["mode"] == "cold" else count_files(cache_plan["env"].values())
    # A launch that finds nothing compiled builds every kernel itself: minutes on a GPU, seconds warm.
    result["start"] = "warm" if result["entries_before"] else "cold"
    return result


def discard_written_since(paths, since):
    """Remove the files under the given folders written at or after `since` (seconds since the epoch); returns
    how many were removed.

    For a start-up that never got ready: its compilers ended with it, and a kernel cut off mid-write keeps its
    final name (torch inductor builds its .so in place), so every later launch would load it and crash. What
    such a start-up wrote is rebuilt by the next launch instead."""
    removed = 0
    for target in _files(paths):
        try:
            if os.lstat(target).st_mtime >= since:
                os.remove(target)
                removed += 1
        except OSError:
            pass
    return removed
