"""The key of a cell's configuration: the filter fleetopt_cell_key (plugins/filter/fleetopt_cell_key.py), which
roles/campaign/tasks/variant.yml applies to what produced the cell. tests/integration/test_cell_key.py renders it
through Ansible against a key recorded before the later settings existed."""
import hashlib
import importlib.util
import json

from helpers import ROOT

spec = importlib.util.spec_from_file_location("fleetopt_cell_key_filter", ROOT / "plugins" / "filter" / "fleetopt_cell_key.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
cell_key = plugin.FilterModule().filters()["fleetopt_cell_key"]

CONFIGURATION = {
    "engine": "vllm", "engine_version": "0.32.0", "variant": "baseline", "flags": {"--enforce-eager": True}, "env": {},
    "engine_spec": {"name": "vllm", "ready": ["Application startup complete"], "compile_cache": {"TRITON_CACHE_DIR": "t"}},
    "benchmark": {"trials": 3, "min_warmups": 8, "warmup_output_len": 0},
    "placement": {"server": None, "client": None}, "baseline_of": None,
    "beside": {"variant": None, "flags": {}, "env": {}},
}


def with_(**changes):
    configuration = json.loads(json.dumps(CONFIGURATION))
    for path, value in changes.items():
        where = configuration
        *parents, name = path.split("__")
        for parent in parents:
            where = where[parent]
        where[name] = value
    return configuration


def test_the_key_is_the_sha256_of_the_parts_as_ansibles_to_json_writes_them():
    parts = plugin.cell_key_parts(CONFIGURATION)
    assert parts == {"engine": "vllm", "engine_version": "0.32.0", "variant": "baseline",
                     "flags": {"--enforce-eager": True}, "env": {}, "benchmark": {"trials": 3},
                     "engine_spec": hashlib.sha256(json.dumps({"name": "vllm", "ready": ["Application startup complete"]},
                                                              sort_keys=True).encode()).hexdigest()}
    assert cell_key(CONFIGURATION) == hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def test_settings_added_later_change_the_key_only_away_from_the_value_earlier_cells_had():
    before = cell_key(CONFIGURATION)
    assert cell_key(with_(benchmark__min_warmups="8")) == before
    assert cell_key(with_(benchmark__warmup_output_len=0)) == before
    assert cell_key(with_(benchmark__min_warmups=0)) != before
    assert cell_key(with_(benchmark__warmup_output_len=8)) != cell_key(with_(benchmark__warmup_output_len=16))
    assert plugin.cell_key_parts(with_(benchmark__min_warmups="2"))["benchmark"]["min_warmups"] == 2


def test_a_placement_enters_the_key_only_where_set():
    keys = {cell_key(CONFIGURATION), cell_key(with_(placement__server="0")), cell_key(with_(placement__client="1")),
            cell_key(with_(placement__server="0", placement__client="1"))}
    assert len(keys) == 4


def test_where_the_compile_caches_live_changes_nothing_and_the_rest_of_the_spec_does():
    assert cell_key(with_(engine_spec__compile_cache={"TRITON_CACHE_DIR": "elsewhere"})) == cell_key(CONFIGURATION)
    assert cell_key(with_(engine_spec__ready=["Uvicorn running"])) != cell_key(CONFIGURATION)


def test_the_stack_beside_it_enters_the_key_of_a_baseline_measured_again_only():
    beside = {"variant": "stack_2", "flags": {"--async-scheduling": True}, "env": {}}
    assert cell_key(with_(beside=beside)) == cell_key(CONFIGURATION)
    again = cell_key(with_(baseline_of="stack_2", beside=beside))
    assert again != cell_key(CONFIGURATION)
    assert again != cell_key(with_(baseline_of="stack_2", beside=dict(beside, flags={})))
