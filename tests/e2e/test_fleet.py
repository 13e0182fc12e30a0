"""Two fleet hosts share one campaign: the variants are spread, each host measures its own baseline."""
import json

from e2e.conftest import SINGLE_LAUNCH, run_fleetopt
from helpers import ROOT


# Three cheap variants (torch.compile's minutes of compilation would only add CI time): host k of 2
# takes every 2nd of them, and each measures its own baseline.
SPREAD = ("float32_compute", "async_scheduling", "omp_threads_unbound")


def test_two_hosts_split_the_variants_and_merge_into_one_matrix(tmp_path, local_engine):
    rc, output = run_fleetopt("run", "--only", ",".join(SPREAD), "-i", str(ROOT / "tests" / "e2e" / "inventories" / "two_hosts.yml"),
                              "--campaign-id", "e2e-fleet", "--results", str(tmp_path / "results"),
                              "--artifacts", str(tmp_path / "artifacts"),
                              "-e", "campaign_state_dir=%s" % (tmp_path / "state"),
                              "-e", json.dumps(dict(SINGLE_LAUNCH, campaign_bench_concurrency=[1], campaign_bench_trials=1)))
    assert rc == 0, output[-3000:]
    summary = json.loads((tmp_path / "results" / "e2e-fleet" / "summary.json").read_text())
    by_host = {}
    for variant in summary["variants"]:
        by_host.setdefault(variant["host"], set()).add(variant["variant"])
    assert set(by_host) == {"engine-a", "engine-b"}
    assert all("baseline" in variants for variants in by_host.values())
    a, b = by_host["engine-a"] - {"baseline"}, by_host["engine-b"] - {"baseline"}
    assert not a & b, "a variant ran on both hosts"
    assert a | b == set(SPREAD) and a and b
    for row in summary["cells"]:
        if row["status"] == "ok" and row["variant"] != "baseline":
            assert row["vs_baseline"] is not None, row  # compared with its own host's baseline
