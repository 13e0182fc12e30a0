"""SGLang's ready line is logged after its own warm-up request succeeded; fleetopt confirms it over HTTP
with an endpoint that answers at once. SGLang's /health and /health_generate (0.5.16's http_server.py)
send a one-token generation and check for its answer only after `await asyncio.sleep(1)`, so a
readiness check through them noticed every H200 launch 1.06-1.14 s after its ready line."""
import pytest
import yaml

from helpers import ROOT
from module_runner import run_module

READY_LINES = [
    [0.0, "[2026-12-04 18:29:20] server_args=ServerArgs(model_path='/tmp/m', attention_backend='triton')"],
    [0.1, "@serve"],
    [0.3, "[2026-12-04 18:31:18] The server is fired up and ready to roll!"],
]
# What SGLang's generating health endpoints take at least, whatever the server's speed.
GENERATING_PROBE_S = 1.0


@pytest.fixture
def sglang_spec():
    return yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())


def test_readiness_is_noticed_without_waiting_on_a_generating_health_check(scripted_python, server_args, port,
                                                                            sglang_spec):
    python = scripted_python({"lines": READY_LINES, "serve_health_on": port,
                              "slow_paths": {"/health": 3.0, "/health_generate": 3.0}})
    args = server_args(python, engine="sglang", engine_version="0.5.16", engine_spec=sglang_spec)
    result = run_module("fleetopt_server", args)
    try:
        server = result["server"]
        assert server["status"] == "ready", result
        assert server["ready_noticed_after_s"] < GENERATING_PROBE_S, server
    finally:
        run_module("fleetopt_server", server_args(python, state="stopped"))
