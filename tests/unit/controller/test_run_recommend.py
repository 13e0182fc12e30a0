"""`fleetopt run --recommend` measures the proposed stack after the matrix (-e recommend=true); `fleetopt run
--verify results/<id>/recommended.yml` verifies an earlier recommendation in a new campaign (-e recommended=)."""
import json

import pytest

from fleetopt import run
from fleetopt.cli import build_parser
from fleetopt.run import campaign_vars
from schema_complete import complete_cell


def test_recommend_asks_the_playbook_for_the_stack_stage():
    args = build_parser().parse_args(["run", "--tier", "1", "--campaign-id", "c", "--recommend"])
    assert campaign_vars(args)["recommend"] is True
    plain = build_parser().parse_args(["run", "--tier", "1", "--campaign-id", "c"])
    assert "recommend" not in campaign_vars(plain) and "recommended" not in campaign_vars(plain)


def test_verify_gives_the_playbook_the_recommendation_by_its_full_path(tmp_path, monkeypatch):
    earlier = tmp_path / "results" / "c0" / "recommended.yml"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("status: measured as a stack\n")
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["run", "--campaign-id", "c", "--verify", "results/c0/recommended.yml"])
    assert campaign_vars(args)["recommended"] == str(earlier)


def test_verify_needs_no_tier_and_takes_none(tmp_path, monkeypatch):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--tier", "1", "--verify", "r.yml"])
    both = build_parser().parse_args(["run", "--recommend", "--verify", "r.yml"])
    with pytest.raises(SystemExit, match="not both"):
        campaign_vars(both)
    calls = []
    monkeypatch.setattr(run, "run_playbook", lambda *a, **k: calls.append(a) or type("R", (), {"rc": 0, "stats": {}, "status": "successful"})())
    earlier = tmp_path / "recommended.yml"
    earlier.write_text("status: measured as a stack\n")
    args = build_parser().parse_args(["run", "--campaign-id", "c", "--verify", str(earlier), "--results", str(tmp_path / "r"),
                                      "--artifacts", str(tmp_path / "a"), "--quiet"])
    run.main(args)  # no "give --tier N or --only": a verifying campaign has no matrix
    assert calls and calls[0][2]["recommended"] == str(earlier)


def test_a_missing_recommendation_is_a_usage_error_before_anything_runs(tmp_path):
    args = build_parser().parse_args(["run", "--campaign-id", "c", "--verify", str(tmp_path / "nope.yml")])
    with pytest.raises(SystemExit, match="no such recommendation"):
        campaign_vars(args)


def test_recommend_resumes_the_campaign_until_the_greedy_search_ends(tmp_path, monkeypatch):
    # optimize.yml measures up to four stack stages per run; a longer search goes on in the same campaign.
    outcomes = ["searching", "searching", "stack"]
    runs = []

    def playbook(name, args, extravars, ident, interrupt=None):
        runs.append((name, dict(extravars)))
        folder = tmp_path / "r" / "c" / "cells" / "h"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "baseline.json").write_text(json.dumps(complete_cell({"variant": "baseline", "host": "h", "title": "Baseline",
                                                                          "order": 0, "status": "ok"})))
        (tmp_path / "r" / "c" / "recommended.yml").write_text("outcome: %s\n" % outcomes[len(runs) - 1])
        return type("R", (), {"rc": 0, "stats": {}, "status": "successful"})()

    monkeypatch.setattr(run, "run_playbook", playbook)
    args = build_parser().parse_args(["run", "--tier", "1", "--campaign-id", "c", "--recommend", "--fresh",
                                      "--results", str(tmp_path / "r"), "--artifacts", str(tmp_path / "a"), "--quiet"])
    assert run.main(args) == 0
    assert [name for name, _ in runs] == ["optimize.yml"] * 3
    assert runs[0][1].get("fresh") is True and "fresh" not in runs[1][1], "a resumed run keeps what was measured"
    assert all(extra["campaign_id"] == "c" and extra["recommend"] is True for _, extra in runs)
