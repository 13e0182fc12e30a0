"""Shared test setup: tests/ on sys.path, and the collection's module_utils importable as
ansible_collections.fleetopt.campaign.plugins.module_utils.* (the files modules ship to hosts)."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import fleetopt.paths  # noqa: E402,F401
