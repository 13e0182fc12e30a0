from helpers import FIXTURES
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_gpu import (
    clean_topology, parse_cuda_version, parse_driver_version, parse_query_csv,
)


def test_query_csv_of_a_real_h200_is_parsed_with_units_dropped():
    gpus = parse_query_csv((FIXTURES / "gpu" / "nvidia-smi-query-gpu.csv").read_text())
    assert len(gpus) == 1
    gpu = gpus[0]
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["driver_version"] == "580.159.04"
    assert gpu["memory_total"] == "143771"
    assert gpu["clocks_max_sm"] == "1980"
    assert gpu["power_limit"] == "700.00"


def test_query_without_rows_gives_no_gpu():
    assert parse_query_csv("index, name\n") == []
    assert parse_query_csv("") == []


def test_cuda_and_driver_versions_from_real_output():
    assert parse_cuda_version((FIXTURES / "gpu" / "nvidia-smi.txt").read_text()) == "13.0"
    assert parse_driver_version((FIXTURES / "gpu" / "proc-driver-nvidia-version.txt").read_text()) == "580.159.04"
    assert parse_cuda_version("no gpu here") is None


def test_topology_loses_its_ansi_underline():
    topo = clean_topology((FIXTURES / "gpu" / "nvidia-smi-topo-m.txt").read_text())
    assert "\x1b" not in topo and topo.splitlines()[0].strip().startswith("GPU0")
