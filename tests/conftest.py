"""Shared test setup: tests/ on sys.path, and the project's module_utils importable as
ansible.module_utils.fleetopt_* (the same files the modules ship to target hosts)."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import fleetopt.paths  # noqa: E402,F401
