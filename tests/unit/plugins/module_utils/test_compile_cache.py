"""Compilation and JIT caches: the engine specs' compile_cache sections and fleetopt_server's
cache_dir / cache_mode."""
import json
import os
import signal
import stat
import time

import pytest
import yaml

from helpers import ROOT
from module_runner import run_module

from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_cache

READY = [[0.1, "(EngineCore pid=1) INFO Initializing a V1 LLM engine (v0.32.0) with config"],
         [0.1, "@serve"],
         [0.1, "INFO:     Application startup complete."]]


def spec(engine):
    return yaml.safe_load((ROOT / "library" / "engines" / ("%s.yml" % engine)).read_text())


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_engine_spec_names_its_compile_caches_validly(engine):
    env = fleetopt_cache.compile_cache_env(spec(engine))
    assert "TORCHINDUCTOR_CACHE_DIR" in env and "TRITON_CACHE_DIR" in env
    assert "FLASHINFER_WORKSPACE_BASE" in env


def test_the_engines_own_cache_roots_are_named():
    assert "VLLM_CACHE_ROOT" in fleetopt_cache.compile_cache_env(spec("vllm"))
    sglang = fleetopt_cache.compile_cache_env(spec("sglang"))
    assert "SGLANG_CACHE_DIR" in sglang and "SGLANG_DG_CACHE_DIR" in sglang


@pytest.mark.parametrize("section, because", [
    ([], "mapping"),
    ({"env": {"A": "x"}, "other": 1}, "one key"),
    ({"env": ["A"]}, "map"),
    ({"env": {"1A": "x"}}, "variable name"),
    ({"env": {"A": "/abs"}}, "relative"),
    ({"env": {"A": "../up"}}, "relative"),
    ({"env": {"A": "x/../../y"}}, "relative"),
    ({"env": {"A": ".cold"}}, "leading dot"),
    ({"env": {"A": ""}}, "relative"),
    ({"env": {"A": "x", "B": "x"}}, "share"),
])
def test_a_malformed_compile_cache_section_is_refused(section, because):
    with pytest.raises(ValueError, match=because):
        fleetopt_cache.compile_cache_env({"compile_cache": section})


def test_a_spec_without_a_section_names_no_cache():
    assert fleetopt_cache.compile_cache_env({"phases": []}) == {}
    assert fleetopt_cache.compile_cache_env(None) == {}


def test_the_plan_leaves_variables_the_launch_sets_to_it(tmp_path):
    plan = fleetopt_cache.plan({"A": "a", "B": "b"}, str(tmp_path), "warm", "slot", {"B": "/mine"})
    assert plan["env"] == {"A": str(tmp_path / "a")}
    assert plan["user_env"] == {"B": "/mine"}
    cold = fleetopt_cache.plan({"A": "a"}, str(tmp_path), "cold", "slot", {})
    assert cold["env"] == {"A": str(tmp_path / ".cold" / "slot" / "a")}
    with pytest.raises(ValueError):
        fleetopt_cache.plan({"A": "a"}, str(tmp_path), "lukewarm", "slot", {})


def test_prepare_creates_private_folders_counts_warm_files_and_empties_a_cold_root(tmp_path):
    warm = fleetopt_cache.plan({"A": "a/deep", "B": "b"}, str(tmp_path / "new" / "cache"), "warm", "s", {})
    first = fleetopt_cache.prepare(warm)
    assert first["entries_before"] == 0
    for path in [tmp_path / "new", tmp_path / "new" / "cache", tmp_path / "new" / "cache" / "a" / "deep"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    (tmp_path / "new" / "cache" / "a" / "deep" / "k.so").write_text("x")
    (tmp_path / "new" / "cache" / "b" / "k.so").write_text("x")
    assert fleetopt_cache.prepare(warm)["entries_before"] == 2

    cold = fleetopt_cache.plan({"A": "a"}, str(tmp_path / "new" / "cache"), "cold", "s", {})
    fleetopt_cache.prepare(cold)
    leftover = tmp_path / "new" / "cache" / ".cold" / "s" / "a" / "k.so"
    leftover.write_text("x")
    assert fleetopt_cache.prepare(cold)["entries_before"] == 0
    assert not leftover.exists()
    # A cold launch never touches the warm folders.
    assert fleetopt_cache.prepare(warm)["entries_before"] == 2


def test_check_mode_creates_nothing(tmp_path):
    plan = fleetopt_cache.plan({"A": "a"}, str(tmp_path / "cache"), "warm", "s", {})
    assert fleetopt_cache.prepare(plan, create=False)["entries_before"] == 0
    assert not (tmp_path / "cache").exists()


# -- fleetopt_server -------------------------------------------------------------------------

def test_the_server_gets_the_cache_folders_and_a_second_launch_starts_warm(scripted_python, server_args, port, tmp_path):
    env_file = tmp_path / "env.json"
    python = scripted_python({"lines": READY, "serve_health_on": port, "env_file": str(env_file),
                              "compile_into": "VLLM_CACHE_ROOT"})
    cache_dir = tmp_path / "cache"
    args = server_args(python, cache_dir=str(cache_dir), env={"TRITON_CACHE_DIR": "/mine", "X": "1"})
    try:
        first = run_module("fleetopt_server", args)["server"]
        assert first["status"] == "ready"
        cache = first["cache"]
        assert cache["dir"] == str(cache_dir) and cache["mode"] == "warm" and cache["root"] == str(cache_dir)
        assert cache["env"]["VLLM_CACHE_ROOT"] == str(cache_dir / "vllm")
        assert cache["env"]["TORCHINDUCTOR_CACHE_DIR"] == str(cache_dir / "inductor")
        assert cache["user_env"] == {"TRITON_CACHE_DIR": "/mine"}  # the launch's own env wins
        assert "TRITON_CACHE_DIR" not in cache["env"]
        assert cache["entries_before"] == 0 and cache["entries_ready"] == 1
        assert cache["start"] == "cold"
        seen = json.loads(env_file.read_text())
        assert seen["VLLM_CACHE_ROOT"] == str(cache_dir / "vllm")
        assert seen["TRITON_CACHE_DIR"] == "/mine"
        assert stat.S_IMODE((cache_dir / "vllm").stat().st_mode) == 0o700
        # Where the cache lives is not part of the configuration's identity.
        assert set(first["env"]) == {"TRITON_CACHE_DIR", "X"}
        plain = dict(args)
        del plain["cache_dir"]
        run_module("fleetopt_server", dict(args, state="stopped"))

        second = run_module("fleetopt_server", args)["server"]
        assert second["cache"]["entries_before"] == 1 and second["cache"]["entries_ready"] == 2
        assert second["cache"]["start"] == "warm"
        assert second["config_hash"] == first["config_hash"]
        run_module("fleetopt_server", dict(args, state="stopped"))
        without = run_module("fleetopt_server", plain)["server"]
        assert without["config_hash"] == first["config_hash"] and without["cache"] is None
        assert "VLLM_CACHE_ROOT" not in json.loads(env_file.read_text())
    finally:
        run_module("fleetopt_server", dict(args, state="stopped"))


def test_a_cold_launch_starts_from_an_empty_folder_and_leaves_the_warm_one_alone(
        scripted_python, server_args, port, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port, "compile_into": "VLLM_CACHE_ROOT"})
    cache_dir = tmp_path / "cache"
    warm = server_args(python, cache_dir=str(cache_dir))
    cold = server_args(python, cache_dir=str(cache_dir), cache_mode="cold")
    try:
        run_module("fleetopt_server", warm)
        run_module("fleetopt_server", dict(warm, state="stopped"))
        first = run_module("fleetopt_server", cold)["server"]["cache"]
        assert first["mode"] == "cold" and first["root"] == str(cache_dir / ".cold" / "t")
        assert first["env"]["VLLM_CACHE_ROOT"] == str(cache_dir / ".cold" / "t" / "vllm")
        assert first["entries_before"] == 0 and first["entries_ready"] == 1
        run_module("fleetopt_server", dict(cold, state="stopped"))
        # Kept after the stop (to read after a crash), emptied by the next cold launch.
        assert len(os.listdir(cache_dir / ".cold" / "t" / "vllm")) == 1
        again = run_module("fleetopt_server", cold)["server"]["cache"]
        assert again["entries_before"] == 0 and again["entries_ready"] == 1
        assert len(os.listdir(cache_dir / "vllm")) == 1
    finally:
        run_module("fleetopt_server", dict(cold, state="stopped"))


def test_a_running_server_with_other_cache_folders_is_restarted(scripted_python, server_args, port, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    warm = server_args(python, cache_dir=str(tmp_path / "cache"))
    try:
        first = run_module("fleetopt_server", warm)
        same = run_module("fleetopt_server", warm)
        assert same["changed"] is False and same["server"]["pid"] == first["server"]["pid"]
        cold = run_module("fleetopt_server", dict(warm, cache_mode="cold"))
        assert cold["changed"] is True and cold["server"]["pid"] != first["server"]["pid"]
    finally:
        run_module("fleetopt_server", dict(warm, state="stopped"))


def test_check_mode_says_where_the_cache_would_be_and_creates_nothing(scripted_python, server_args, port, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    result = run_module("fleetopt_server", server_args(python, cache_dir=str(tmp_path / "cache")), check_mode=True)
    assert result["server"]["cache"]["env"]["VLLM_CACHE_ROOT"] == str(tmp_path / "cache" / "vllm")
    assert not (tmp_path / "cache").exists()


def test_a_malformed_compile_cache_section_fails_before_anything_is_launched(
        scripted_python, server_args, port, tmp_path, vllm_spec):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    bad = dict(vllm_spec, compile_cache={"env": {"VLLM_CACHE_ROOT": "../outside"}})
    result = run_module("fleetopt_server", server_args(python, engine_spec=bad, cache_dir=str(tmp_path / "cache")))
    assert result["failed"] is True and "compile_cache.env.VLLM_CACHE_ROOT" in result["msg"]
    assert not (tmp_path / "outside").exists()


@pytest.mark.parametrize("how", ["timeout", "crash"])
def test_a_start_up_that_never_got_ready_takes_what_it_wrote_out_of_the_warm_cache(
        scripted_python, server_args, port, tmp_path, how):
    # A start-up stopped while it compiles (its time-out, or its crash, ends the compiler with it) can leave a
    # truncated kernel under its final name; every later launch would load it and crash ("file too short").
    ready = server_args(scripted_python({"lines": READY, "serve_health_on": port, "compile_into": "VLLM_CACHE_ROOT"}),
                        cache_dir=str(tmp_path / "cache"))
    unfinished = {"lines": READY[:1], "compile_into": "VLLM_CACHE_ROOT"}
    unfinished.update({"exit_code": None} if how == "timeout" else {"exit_code": 1})
    failing = server_args(scripted_python(unfinished, name="unfinished"), cache_dir=str(tmp_path / "cache"),
                          startup_timeout=3)
    try:
        run_module("fleetopt_server", ready)
        run_module("fleetopt_server", dict(ready, state="stopped"))
        kept = sorted(os.listdir(tmp_path / "cache" / "vllm"))
        assert len(kept) == 1
        result = run_module("fleetopt_server", failing)
        assert result.get("failed") and result["server"]["status"] == ("timeout" if how == "timeout" else "crashed")
        assert result["server"]["cache"]["entries_before"] == 1
        assert result["server"]["cache"]["discarded"] == 1
        assert sorted(os.listdir(tmp_path / "cache" / "vllm")) == kept
    finally:
        run_module("fleetopt_server", dict(failing, state="stopped"))


def test_a_start_up_its_lease_stopped_takes_what_it_wrote_out_at_the_next_stop(
        scripted_python, server_args, port, tmp_path):
    # The controller went away while the server compiled: its lease ended the session, not fleetopt_server, so
    # what it wrote is taken out when the next stop finds it gone.
    starting = server_args(scripted_python({"lines": READY[:1], "compile_into": "VLLM_CACHE_ROOT", "exit_code": None}),
                           cache_dir=str(tmp_path / "cache"), follow_slice=1.0, startup_timeout=60)
    try:
        server = run_module("fleetopt_server", starting)["server"]
        assert server["status"] == "starting"
        deadline = time.time() + 10
        while not os.listdir(tmp_path / "cache" / "vllm") and time.time() < deadline:
            time.sleep(0.1)
        assert len(os.listdir(tmp_path / "cache" / "vllm")) == 1
        os.killpg(server["sid"], signal.SIGKILL)
        time.sleep(0.5)
        stopped = run_module("fleetopt_server", dict(starting, state="stopped"))["server"]
        assert stopped["cache"]["discarded"] == 1
        assert os.listdir(tmp_path / "cache" / "vllm") == []
    finally:
        run_module("fleetopt_server", dict(starting, state="stopped"))
