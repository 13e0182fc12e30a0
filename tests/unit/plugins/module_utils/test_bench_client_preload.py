"""The kept benchmark client's preload (fleetopt_bench_client): the client's modules imported ahead of its
first run, under their own names; one that fails to import is named with its error and the client serves on."""
import sys

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_bench_client import preload


def test_a_preload_imports_each_module_and_names_those_that_failed(tmp_path, monkeypatch):
    (tmp_path / "preload_ok_mod.py").write_text("VALUE = 1\nif __name__ == '__main__':\n    raise SystemExit(3)\n")
    (tmp_path / "preload_broken_mod.py").write_text("raise RuntimeError('needs a GPU')\n")
    (tmp_path / "preload_exiting_mod.py").write_text("raise SystemExit(2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    answer = preload(["preload_ok_mod", "preload_broken_mod", "no_such_module_anywhere", "preload_exiting_mod"])
    assert answer["preloaded"] == ["preload_ok_mod"] and "preload_ok_mod" in sys.modules
    assert answer["failed"] == {"preload_broken_mod": "RuntimeError: needs a GPU",
                                "no_such_module_anywhere": "ModuleNotFoundError: No module named 'no_such_module_anywhere'",
                                "preload_exiting_mod": "SystemExit: 2"}
    assert answer["ended_at"] >= answer["started_at"]
