"""The scripted engine (server.py) behind an engine interpreter path a campaign can be given.

`engine_python(folder, scenario, real_python)` writes `folder/bin/python`, a shell script that stands
where the engine's interpreter stands (an inventory's campaign_engine_python, fleetopt_server's
`python`). A server launch (`-m vllm.entrypoints.openai.api_server ...`, `-m sglang.launch_server ...`)
runs the scripted engine with the scenario and the launch's real command line; anything else (the
version probe fleetopt_plan runs, the engine's own benchmark client in fleetopt's kept client) runs on
the real engine's interpreter, unchanged. So the campaign is fleetopt's own, the client is vLLM's
own, and only the server is scripted.
"""
import json
import os
import pathlib
import shlex
import sys

SERVER = pathlib.Path(__file__).resolve().parent / "server.py"
SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "sglang.launch_server")

WRAPPER = """#!/bin/sh
# A scripted engine in front of %(real)s (tests/scripted_engine): server launches are scripted.
for arg in "$@"; do
  case "$arg" in
    %(modules)s) exec %(python)s %(server)s %(scenario)s "$@" ;;
  esac
done
exec %(real)s "$@"
"""


def engine_python(folder, scenario, real_python):
    """Write the scenario and the interpreter stand-in under `folder`; return the stand-in's path."""
    folder = pathlib.Path(folder)
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    scenario_path = folder / "scenario.json"
    scenario_path.write_text(json.dumps(scenario, indent=1))
    python = folder / "bin" / "python"
    python.write_text(WRAPPER % {"real": shlex.quote(str(real_python)), "modules": "|".join(SERVER_MODULES),
                                 "python": shlex.quote(sys.executable), "server": shlex.quote(str(SERVER)),
                                 "scenario": shlex.quote(str(scenario_path))})
    python.chmod(0o755)
    return str(python)


def launches(scenario):
    """The start-ups the scripted engine recorded in the scenario's launches_file: [(pid, flags), ...]."""
    path = pathlib.Path(scenario["launches_file"])
    if not path.exists():
        return []
    return [(int(line.split(" ", 1)[0]), json.loads(line.split(" ", 1)[1])) for line in path.read_text().splitlines()]
