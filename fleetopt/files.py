"""Atomic writes for everything the controller writes into a campaign folder (one
implementation, shared with the fleetopt_cell action plugin)."""
# makes the collection's module_utils importable
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_files import write_atomically, write_json_atomically

__all__ = ["write_atomically", "write_json_atomically"]
