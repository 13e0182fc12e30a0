"""Which of a cell's files on its host the campaign brings to the controller: the filter fleetopt_cell_files
(plugins/filter/fleetopt_cell.py), which roles/campaign/tasks/measure.yml fetches. Every run of the client is
measured work - trials, a trial's short warm-up run, the warm-up runs until settled - so each one's result file
and raw output come back, not only the trials'."""
import importlib.util

from helpers import ROOT

spec = importlib.util.spec_from_file_location("fleetopt_cell_filter", ROOT / "plugins" / "filter" / "fleetopt_cell.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
files = plugin.FilterModule().filters()["fleetopt_cell_files"]

BENCH = "/state/bench"


def test_the_server_log_and_every_client_run_with_its_raw_output():
    cell = {
        "startup": {"log_path": "/state/logs/baseline.log"},
        "levels": [
            {"concurrency": 4, "trial": 1, "result_file": BENCH + "/baseline-c4-t1.json",
             "warmup_run": {"status": "ok", "result_file": BENCH + "/baseline-c4-t1-warmup.json"}},
            {"concurrency": 4, "trial": 2, "result_file": BENCH + "/baseline-c4-t2.json", "warmup_run": None},
        ],
        "benchmark": {"warmup": [{"concurrency": 4, "runs": [
            {"warmup_run": 1, "result_file": BENCH + "/baseline-c4-w1.json"},
            {"warmup_run": 2, "result_file": BENCH + "/baseline-c4-w2.json"}]}]},
    }
    runs = ["baseline-c4-w1", "baseline-c4-w2", "baseline-c4-t1-warmup", "baseline-c4-t1", "baseline-c4-t2"]
    assert files(cell) == ["/state/logs/baseline.log"] + [
        "%s/%s.%s" % (BENCH, run, ext) for run in runs for ext in ("json", "out")]


def test_a_cell_that_never_started_or_never_measured_names_only_what_it_has():
    assert files({"startup": {"log_path": None}, "levels": [], "benchmark": {"warmup": None}}) == []
    assert files({"status": "not_applicable"}) == []
    assert files({"startup": {"log_path": "/s/x.log"}, "levels": [{"concurrency": 1, "status": "skipped"}]}) == [
        "/s/x.log"]
