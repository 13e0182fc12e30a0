"""Atomic writes for everything the controller writes into a campaign folder (one
implementation, shared with the fleetopt_cell action plugin)."""
import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_files import (  # noqa: F401
    write_atomically, write_json_atomically)
