"""The filter `fleetopt_version_in_range` (plugins/filter/fleetopt_versions.py), which the
sglang_stack role checks patch releases with, is module_utils/fleetopt_versions itself."""
import importlib.util
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_versions
from helpers import ROOT

PLUGIN = ROOT / "plugins" / "filter" / "fleetopt_versions.py"


def load_plugin():
    spec = importlib.util.spec_from_file_location("fleetopt_versions_filter", PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_filter_is_the_module_utils_implementation():
    plugin = load_plugin()
    in_range = plugin.FilterModule().filters()["fleetopt_version_in_range"]
    assert os.path.samefile(plugin.fleetopt_versions.__file__, fleetopt_versions.__file__)
    for version, spec, expected in [("0.5.10rc1", ">=0.5.10", False), ("0.5.9", ">=0.5.6,<0.5.10", True),
                                    ("0.6.3", ">=0.6.0,<0.6.7", True), ("0.5.5.post3", "<=0.5.5", False)]:
        assert in_range(version, spec) is expected


@pytest.mark.parametrize("version,spec", [("0.5.9", ">=0.5.6 <0.5.10"), ("0.5.x", ">=0.5.6")])
def test_a_bad_version_or_range_is_a_filter_error(version, spec):
    in_range = load_plugin().FilterModule().filters()["fleetopt_version_in_range"]
    with pytest.raises(AnsibleFilterError, match="fleetopt_version_in_range"):
        in_range(version, spec)
