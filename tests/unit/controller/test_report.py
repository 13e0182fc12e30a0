import argparse
import json

from fleetopt.report import write
from schema_complete import complete_cell


def level(c, out, ttft=10.0, status="ok", trial=1):
    metrics = {"output_throughput": out, "total_throughput": out * 2, "mean_ttft_ms": ttft, "p99_ttft_ms": ttft * 2,
               "mean_itl_ms": 1.0, "completed": 32.0}
    return {"concurrency": c, "trial": trial, "status": status, "metrics": metrics if status == "ok" else None,
            "reason": None if status == "ok" else "the server exited during the benchmark"}


def trials(c, *outputs):
    return [level(c, out, trial=i + 1) for i, out in enumerate(outputs)]


def cell(variant, order, status="ok", levels=(), failure=None, reason=None, host="h1"):
    return complete_cell({"variant": variant, "order": order, "title": variant, "host": host, "engine": "vllm", "status": status,
            "levels": list(levels), "failure": failure, "reason": reason,
            "startup": {"startup_s": 20.0, "phases": {"launch": {"duration_s": 9.0}, "weights": {"duration_s": 1.0}}},
            "benchmark": {"concurrency": [1, 4], "trials": 1, "input_len": 64, "output_len": 64},
            "provenance": {"engine_version": "0.32.0+cpu", "fleetopt_revision": "abc123",
                           "host": {"cpu_model": "EPYC", "cpu_count": 2, "gpu_count": 0}}})


def write_campaign(tmp_path, cells):
    campaign = tmp_path / "results" / "c1"
    for c in cells:
        path = campaign / "cells" / c["host"] / ("%s.json" % c["variant"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(c))
    return campaign


def run(campaign, link=None):
    return write.main(argparse.Namespace(campaign_dir=str(campaign), latest_link=link,
                                          verdict_metric="output_throughput", confidence=0.95, min_effect=3.0))


def test_summary_has_the_documented_shape_order_and_baseline_deltas(tmp_path):
    cells = [
        cell("zeta", 2, levels=trials(1, 150.0, 151.0, 149.0) + trials(4, 300.0, 301.0, 299.0)),
        cell("baseline", 0, levels=trials(1, 100.0, 101.0, 99.0) + trials(4, 400.0, 401.0, 399.0)),
        cell("gpu_only", 3, status="not_applicable", reason="needs 2 GPU(s), host has 0"),
        cell("crashy", 1, status="blocked", failure={"failure_class": "dynamo_fullgraph_graph_break", "verdict": "blocked",
                                                       "root_cause": "graph break", "remedy": "upgrade"}),
    ]
    campaign = write_campaign(tmp_path, cells)
    assert run(campaign, str(tmp_path / "results" / "latest")) == 0
    summary = json.loads((campaign / "summary.json").read_text())
    assert summary["campaign"] == "c1" and summary["engine"] == "vllm"
    rows = summary["cells"]
    assert [(r["variant"], r["concurrency"], r["status"]) for r in rows] == [
        ("baseline", 1, "ok"), ("baseline", 4, "ok"), ("crashy", None, "blocked"),
        ("zeta", 1, "ok"), ("zeta", 4, "ok"), ("gpu_only", None, "not_applicable")]
    for r in rows:
        assert set(r) >= {"variant", "status", "failure_class", "concurrency", "metrics"}
    assert rows[2]["failure_class"] == "dynamo_fullgraph_graph_break" and rows[2]["metrics"] == {}
    assert rows[3]["vs_baseline"]["output_throughput"]["change_pct"] == 50.0
    assert rows[3]["verdict"] == "improved" and rows[4]["verdict"] == "regressed"
    assert rows[3]["trials"] == 3 and rows[3]["metrics"]["output_throughput"] == 150.0
    assert rows[3]["stats"]["output_throughput"]["ci_low"] < 150.0 < rows[3]["stats"]["output_throughput"]["ci_high"]
    assert rows[4]["vs_baseline"]["output_throughput"]["change_pct"] == -25.0
    variants = {v["variant"]: v["verdict"] for v in summary["variants"]}
    assert variants == {"baseline": "baseline", "crashy": "blocked", "zeta": "mixed", "gpu_only": "not_applicable"}
    assert (tmp_path / "results" / "latest").resolve() == campaign.resolve()
    markdown = (campaign / "report.md").read_text()
    assert "| zeta" in markdown and "+50.0 %" in markdown and "-25.0 %" in markdown
    csv_rows = (campaign / "summary.csv").read_text().splitlines()
    assert csv_rows[0].startswith("variant,host,concurrency,status,verdict,trials") and len(csv_rows) == 7
    assert "needs 2 GPU(s), host has 0" in markdown and "graph break" in markdown and "upgrade" in markdown


def test_a_level_lost_to_a_dying_server_is_reported_as_such(tmp_path):
    campaign = write_campaign(tmp_path, [
        cell("baseline", 0, levels=[level(1, 100.0)]),
        cell("v", 1, levels=[level(1, 120.0), level(4, 0, status="failed")]),
    ])
    run(campaign)
    rows = json.loads((campaign / "summary.json").read_text())["cells"]
    assert rows[-1]["status"] == "crashed" and rows[-1]["failure_class"] == "benchmark_failed"
    assert "exited during the benchmark" in rows[-1]["reason"]


def test_deltas_compare_on_the_same_host_only(tmp_path):
    campaign = write_campaign(tmp_path, [
        cell("baseline", 0, levels=[level(1, 100.0)], host="a"),
        cell("baseline", 0, levels=[level(1, 200.0)], host="b"),
        cell("v", 1, levels=[level(1, 220.0)], host="b"),
    ])
    run(campaign)
    rows = json.loads((campaign / "summary.json").read_text())["cells"]
    assert [r["vs_baseline"]["output_throughput"]["change_pct"] for r in rows if r["variant"] == "v"] == [10.0]


def test_an_empty_or_missing_campaign_is_a_clear_error(tmp_path, capsys):
    assert run(tmp_path / "nope") == 2
    (tmp_path / "empty" / "cells").mkdir(parents=True)
    assert run(tmp_path / "empty") == 2
    assert "no cells yet" in capsys.readouterr().err


def test_an_aa_run_reports_the_noise_floor(tmp_path):
    campaign = write_campaign(tmp_path, [
        cell("baseline", 0, levels=trials(1, 100.0, 100.2, 99.8)),
        cell("baseline_aa", 9, levels=trials(1, 100.1, 99.9, 100.0)),
    ])
    run(campaign)
    summary = json.loads((campaign / "summary.json").read_text())
    assert summary["noise_floor"][0]["verdict"] == "neutral"
    assert summary["noise_floor"][0]["ci_low_pct"] < 0 < summary["noise_floor"][0]["ci_high_pct"]
    markdown = (campaign / "report.md").read_text()
    assert "baseline vs itself" in markdown and "A/A neutral" in markdown
    assert "Its noise resolves changes of %.1f %% or more." % summary["aa"][0]["resolves_pct"] in markdown


def test_a_noisy_aa_makes_the_report_say_why_verdicts_are_inconclusive(tmp_path):
    campaign = write_campaign(tmp_path, [
        cell("baseline", 0, levels=trials(1, 100.0, 102.0, 98.0)),
        cell("v", 1, levels=trials(1, 150.0, 151.0, 149.0)),
        cell("baseline_aa", 9, levels=trials(1, 101.0, 99.0, 100.5)),
        cell("baseline", 0, levels=trials(1, 100.0, 102.0, 98.0), host="h2"),
    ])
    run(campaign)
    summary = json.loads((campaign / "summary.json").read_text())
    assert summary["noise_floor"][0]["verdict"] == "inconclusive"
    v = next(x for x in summary["variants"] if x["variant"] == "v")
    assert v["verdict"] == "inconclusive" and v["verdict_before_aa"] == "improved"
    markdown = (campaign / "report.md").read_text()
    assert "the host's A/A comparison (baseline vs itself) was inconclusive" in markdown
    assert "h2: A/A was off" in markdown
    resolves = summary["aa"][0]["resolves_pct"]
    assert resolves > 3.0 and ("Its noise resolves changes of %.1f %% or more: judged at that minimum effect "
                               "(`fleetopt report` with `--min-effect %.1f`), its A/A would be neutral" % (
                                   resolves, resolves)) in markdown
    csv_text = (campaign / "summary.csv").read_text()
    assert csv_text.splitlines()[0].endswith("launches,failed_trials,verdict_before_aa,verdict_reason")
    assert ',improved,"the host\'s A/A comparison' in csv_text


def test_the_report_states_the_rules_the_design_and_inconclusive_reasons(tmp_path):
    design = {"launches": 2, "order": "counterbalanced (ABBA)"}
    campaign = write_campaign(tmp_path, [
        dict(cell("baseline", 0, levels=trials(1, 100.0, 101.0, 99.0) + trials(4, 200.0, 201.0, 199.0)),
             design=design),
        cell("noisy", 1, levels=trials(1, 150.0, 60.0, 140.0) + trials(4, 200.0, 201.0, 199.0)),
    ])
    run(campaign)
    markdown = (campaign / "report.md").read_text()
    assert "intervals are simultaneous over the m levels (Bonferroni)" in markdown
    assert "Design: launches: 2, order: counterbalanced (ABBA). Unit of replication: the trial: one server launch " \
        "per configuration, so the spread between launches is not in the intervals." in markdown
    assert "(Welch, over trials)" in markdown
    assert "| noisy" in markdown and "inconclusive" in markdown and "interval width" in markdown
    summary = json.loads((campaign / "summary.json").read_text())
    assert summary["settings"]["design"] == design
    assert summary["variants"][1]["verdict"] == "inconclusive"
    assert "c=1: " in summary["variants"][1]["verdict_reason"]


def test_the_report_states_the_clients_cost_and_flags_client_bound_runs():
    from fleetopt.report.markdown import client_cost_text
    cells = [{"variant": "baseline", "benchmark": {"client_wall_s": 100.0, "measured_s": 80.0},
              "levels": [{"concurrency": 16, "client_bound": True}, {"concurrency": 1, "client_bound": False}]},
             {"variant": "v", "benchmark": {"client_wall_s": 100.0, "measured_s": 90.0}, "levels": []}]
    text = client_cost_text(cells)
    assert "200 s of wall time for 170 s measured (overhead 15 %)" in text
    assert "1 run(s) client-bound" in text and "baseline c=16" in text
    assert client_cost_text([{"variant": "old", "benchmark": {}, "levels": []}]).endswith("not recorded")


def test_the_report_states_what_the_warm_up_runs_cost_and_which_servers_did_not_settle():
    from fleetopt.report.markdown import client_cost_text
    settled = {"concurrency": 4, "settled": True, "stopped_by": "settled", "runs": [{}, {}]}
    capped = {"concurrency": 4, "settled": False, "stopped_by": "cap", "runs": [{}, {}, {}, {}],
              "reason": "4 runs made, the most allowed, and the last two were 12.0 % apart, more than 10 %"}
    cells = [{"variant": "baseline", "launch_number": 1, "benchmark": {"client_wall_s": 100.0, "measured_s": 80.0,
                                                                       "warmup_s": 8.0, "warmup": [settled]}},
             {"variant": "v", "launch_number": 2, "benchmark": {"client_wall_s": 100.0, "measured_s": 70.0,
                                                                "warmup_s": 16.0, "warmup": [capped]}},
             {"variant": "old", "benchmark": {"client_wall_s": 10.0, "measured_s": 9.0}}]
    text = client_cost_text(cells)
    assert "warm-up runs 24 s (6 runs; 1 of 2 new servers settled; not settled: v launch 2 c=4 (cap))" in text
    assert "warm-up runs" not in client_cost_text(cells[2:])


def test_the_report_states_what_the_short_warm_ups_cost():
    from fleetopt.report.markdown import client_cost_text
    short = {"status": "ok", "num_prompts": 8, "output_len": 8, "client_run_s": 1.25}
    cells = [{"variant": "baseline", "benchmark": {"client_wall_s": 100.0, "measured_s": 90.0},
              "levels": [{"concurrency": 1, "warmup_run": short}, {"concurrency": 1},
                         {"concurrency": 4, "warmup_run": dict(short, num_prompts=4, client_run_s=0.5)}]}]
    assert "short warm-ups 1.8 s (2 runs, 12 requests of 8 output tokens)" in client_cost_text(cells)
    assert "short warm-ups" not in client_cost_text([dict(cells[0], levels=[{"concurrency": 1}])])


def test_the_report_names_the_launch_as_the_unit_when_configurations_were_launched_twice(tmp_path):
    design = {"launches": 2, "order": "counterbalanced (ABBA)"}
    cells = [dict(cell(name, order, levels=trials(1, *values)), launch_number=number, launches=2, design=design)
             for name, order, number, values in (("baseline", 0, 1, (100.0, 101.0)), ("v", 1, 1, (130.0, 131.0)),
                                                 ("v", 1, 2, (128.0, 129.0)), ("baseline", 0, 2, (99.0, 100.0)))]
    campaign = write_campaign(tmp_path, [c for c in cells if c["launch_number"] == 1])
    for c in cells[2:]:
        (campaign / "cells" / "h1" / ("%s.launch2.json" % c["variant"])).write_text(json.dumps(c))
    run(campaign)
    markdown = (campaign / "report.md").read_text()
    assert "Unit of replication: the server launch: each level's interval from launch means" in markdown
    assert "(over launch means, their spread pooled over the host's configurations at that level (each round's shift" \
        in markdown
    html = (campaign / "report.html").read_text()
    assert "Unit of replication" in html
    assert "(over launch means, their spread pooled over the host&#39;s configurations at that level (each round" in html


def test_a_report_run_again_by_hand_judges_with_the_settings_the_campaign_ran_with(tmp_path):
    # The campaign's report task passes campaign_min_effect_pct (5 % on the embedded default); a user who runs
    # `fleetopt report results/<id>` again must get the same verdicts, not the option defaults' (3 %).
    from fleetopt import cli
    recorded = {"metric": "output_throughput", "confidence": 0.9, "min_effect_pct": 5.0}
    cells = [dict(cell("baseline", 0, levels=trials(1, 100.0, 100.5, 99.5)), verdicts=recorded),
             dict(cell("v", 1, levels=trials(1, 104.0, 104.5, 103.5)), verdicts=recorded)]
    campaign = write_campaign(tmp_path, cells)

    def settings(*options):
        args = cli.build_parser().parse_args(["report", str(campaign), *options])
        assert write.main(args) == 0
        summary = json.loads((campaign / "summary.json").read_text())
        return summary["settings"], next(v for v in summary["variants"] if v["variant"] == "v")["verdict"]

    found, verdict = settings()
    assert (found["min_effect_pct"], found["confidence"], found["verdict_settings_from"]) == (5.0, 0.9, "cells")
    assert verdict == "neutral"  # +4 %, inside the campaign's 5 % band
    found, verdict = settings("--min-effect", "3")
    assert (found["min_effect_pct"], found["confidence"], found["verdict_settings_from"]) == (3.0, 0.9, "report")
    assert verdict == "improved"
    del cells[0]["verdicts"], cells[1]["verdicts"]  # cells from before the settings were recorded
    campaign = write_campaign(tmp_path, cells)
    found, _ = settings()
    assert (found["min_effect_pct"], found["confidence"], found["verdict_settings_from"]) == (3.0, 0.95, "defaults")


def test_the_report_states_the_cpu_the_hypervisor_took_and_names_the_runs_that_lost_much():
    from fleetopt.report.steal import steal_text
    cells = [{"variant": "baseline", "host": "h1", "launch_number": 2,
              "levels": [{"concurrency": 4, "trial": 1, "host_steal_share": 0.12},
                         {"concurrency": 4, "trial": 2, "host_steal_share": 0.01}]},
             {"variant": "v", "host": "h1", "levels": [{"concurrency": 4, "trial": 1, "host_steal_share": 0.0},
                                                     {"concurrency": 4, "trial": 2, "status": "failed"}]}]
    text = steal_text(cells)
    assert "median 1.0 %, most 12.0 % (baseline launch 2 c=4 trial 1)" in text, text
    assert "1 of 3 runs lost 5 % or more" in text and text.endswith(": baseline launch 2 c=4 trial 1"), text
    quiet = [dict(cells[1], levels=[{"concurrency": 1, "trial": 1, "host_steal_share": 0.0}])]
    assert steal_text(quiet).endswith("none in any of the 1 runs")
    assert "not recorded" in steal_text([{"variant": "old", "levels": [{"concurrency": 1}]}])
    two_hosts = [dict(cells[0], host="h2"), cells[1]]
    assert "baseline on h2 launch 2 c=4 trial 1" in steal_text(two_hosts)
