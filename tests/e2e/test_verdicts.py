"""The verdicts the measurement design must reach: one campaign of the embedded default's design (two launches per
variant in ABBA order, A/A, sequential trials, the launch as the unit of replication) with the large effect planted
at concurrency 4 (tests/fixtures/planted_effects.yml: one sequence per step, `--max-num-seqs 1`).

On the scripted engine (tests/scripted_engine), which serves at most --max-num-seqs requests at once with a set time
per token: the planted loss is exactly three quarters of the output throughput at c=4 (one request served at a time
instead of four), and the baseline equals itself, so the A/A shows equivalence and the loss is `regressed` on any
host. How the verdicts hold on the real engine under a host's noise is tests/benchmarks/verdicts_hold.py's to count."""
import json

import pytest
import yaml

from e2e.conftest import isolated, run_fleetopt
from fleetopt.analysis.early_aa import early_aa
from helpers import ROOT, bench_clients_under, free_port
from scripted_engine import engine_python, launches

pytestmark = pytest.mark.timed

PLANTED = yaml.safe_load((ROOT / "tests" / "fixtures" / "planted_effects.yml").read_text())
# The embedded default's design, without its capacity search: the verdicts are taken at the planted level.
DESIGN = {"campaign_launches": 2, "campaign_bench_max_trials": 3, "campaign_bench_target_halfwidth_pct": 3.0,
          "campaign_capacity_search_levels": 0}


# 5 ms a token: a request of the default's 64 output tokens takes about 0.33 s once scheduled.
SCENARIO = {"per_token_s": 0.005, "ttft_s": 0.01}


@pytest.fixture(scope="module")
def summary(tmp_path_factory, local_engine):
    base = tmp_path_factory.mktemp("verdicts")
    scenario = dict(SCENARIO, launches_file=str(base / "launches"))
    python = engine_python(base / "engine", scenario, local_engine["real_python"])
    optimizations = [dict({k: v for k, v in o.items() if k != "expect"}, tier=9) for o in PLANTED["optimizations"]
                     if o["id"] == "planted_large"]
    rc, output = run_fleetopt(
        "run", "--only", ",".join(o["id"] for o in optimizations), "--aa",
        *isolated(base, free_port(), "e2e-verdicts", trials=2, concurrency=PLANTED["settings"]["campaign_bench_concurrency"],
                  design=DESIGN, engine_python=python),
        "-e", json.dumps({"campaign_extra_optimizations": optimizations}))
    assert rc == 0, output[-4000:]
    # Six launches, the planted variant's with the planted flag: what the scripted engine served is what was planted.
    seqs = [flags.get("--max-num-seqs") for _, flags in launches(scenario)]
    assert sorted(seqs, key=str) == ["1", "1"] + [None] * 4, seqs
    return json.loads((base / "results" / "e2e-verdicts" / "summary.json").read_text()), base, output


def variant(summary, name):
    return next(v for v in summary["variants"] if v["variant"] == name)


def expected(name):
    return next(o["expect"] for o in PLANTED["optimizations"] if o["id"] == name)


def test_every_variant_ran_twice_in_counterbalanced_order_and_the_report_says_so(summary):
    data, base, output = summary
    for name in ("baseline", "baseline_aa", "planted_large"):
        assert variant(data, name)["launches"] == 2, variant(data, name)
    assert "counterbalanced" in data["settings"]["design"]["order"]
    order = [line.split("Run ", 1)[1].split("]", 1)[0] for line in output.splitlines()
             if "TASK [campaign : Run " in line and "each launch" not in line]
    assert order == ["baseline", "baseline_aa", "planted_large",
                     "planted_large.launch2", "baseline_aa.launch2", "baseline.launch2"], order
    assert "counterbalanced" in (base / "results" / "e2e-verdicts" / "report.md").read_text()
    # The launch is the unit: each comparison from launch means, their spread pooled over the three configurations
    # launched twice at the level, each in both rounds of the order, so the rounds are blocks: (3 - 1)(2 - 1) degrees
    # of freedom.
    assert data["settings"]["unit_of_replication"] == "launch"
    for row in data["cells"]:
        if row["variant"] != "baseline" and row["status"] == "ok":
            compared = row["vs_baseline"]["output_throughput"]
            assert (compared["compared"], compared["launch_df"], compared["launches_variant"]) == ("launches", 2, 2), row
            assert compared["rounds_blocked"] is True and compared["interval_df"] <= 2, row


def test_the_baseline_against_itself_is_neutral_and_the_a_a_gate_holds_nothing_back(summary):
    data, _, _ = summary
    aa = variant(data, "baseline_aa")
    floor = data["noise_floor"]
    assert floor and floor[0]["verdict"] == aa["verdict"] and floor[0]["reason"]
    assert aa["verdict"] == "neutral", aa
    gate = next(h for h in data["aa"] if h["host"] == aa["host"])
    assert gate["gate"] is None, gate


def test_a_large_planted_loss_is_regressed_by_the_planted_three_quarters(summary):
    data, _, _ = summary
    large = variant(data, "planted_large")
    assert large["verdict"] == "regressed" and large["verdict"] in expected("planted_large"), large
    [row] = [r for r in data["cells"] if r["variant"] == "planted_large" and r["status"] == "ok"
             and r["concurrency"] == 4 and (r.get("vs_baseline") or {}).get("output_throughput")]
    compared = row["vs_baseline"]["output_throughput"]
    # One request at a time instead of four: -75 %, less the client's own time between requests, the same for both.
    assert -78 < compared["change_pct"] < -71 and compared["ci_high_pct"] < 0, compared


def test_each_level_records_its_precision_and_the_clients_cost(summary):
    _, base, _ = summary
    cell = json.loads((base / "results" / "e2e-verdicts" / "cells" / "localhost" / "baseline.json").read_text())
    precision = cell["benchmark"]["precision"][0]
    assert precision["stopped_by"] in ("target", "budget") and 2 <= precision["trials"] <= 3, precision
    assert cell["benchmark"]["measured_s"] > 0 and cell["benchmark"]["client_wall_s"] > cell["benchmark"]["measured_s"]
    assert all(lv["client_cpu_share"] is not None for lv in cell["levels"])


def test_one_benchmark_client_serves_every_cell_of_the_host_and_is_gone_at_the_end(summary):
    _, base, _ = summary
    cells = base / "results" / "e2e-verdicts" / "cells" / "localhost"
    # A run of the client: a trial, or the short run of warm-up requests before it (the embedded default's).
    started = {path.stem: [run["client_started"] for lv in json.loads(path.read_text())["levels"]
                           for run in ([lv["warmup_run"]] if lv.get("warmup_run") else []) + [lv]]
               for path in cells.glob("*.json")}
    # Started before the first server, with its imports under way meanwhile: no run started it.
    assert len(started) == 6 and sum(map(sum, started.values())) == 0, started
    # One process answered every request of the campaign: its count is the preload and every run, not restarted.
    folders = list((base / "state" / "run").glob("*.client"))
    assert len(folders) == 1, folders
    served = json.loads((folders[0] / "client.json").read_text())
    assert served["runs"] == 1 + sum(map(len, started.values())), (served, started)
    assert not bench_clients_under(base), "the client outlived the campaign"


def test_the_play_says_what_the_first_aa_pair_tells_before_the_planted_variant_runs(summary):
    _data, base, output = summary
    early = output.index("early A/A (the first launch of the baseline against the first of its copy")
    assert output.index("TASK [campaign : Run baseline_aa]") < early < output.index("TASK [campaign : Run planted_large]")
    said = " ".join(output[early:early + 1200].split())
    # What the play said is what the first pair's cells give, however noisy the host that ran them.
    resolves = early_aa(base / "results" / "e2e-verdicts", "localhost")["resolves_pct"]
    assert "this host resolves changes of %.1f %% or more" % resolves in said, said
