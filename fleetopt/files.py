"""Atomic writes for everything the controller writes into a campaign folder (one
implementation, shared with the fleetopt_cell action plugin), and the records read back from it."""
import json
import pathlib

# makes the collection's module_utils importable
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_files import write_atomically, write_json_atomically

__all__ = ["json_records", "write_atomically", "write_json_atomically"]


def json_records(campaign_dir, pattern):
    """(path, record) of each JSON file of `campaign_dir` that `pattern` matches, in name order; a file that does not
    parse is passed over (a host's record or a leftover's is rewritten in place while its campaign runs)."""
    for path in sorted(pathlib.Path(campaign_dir).glob(pattern)):
        try:
            yield path, json.loads(path.read_text())
        except ValueError:
            continue
