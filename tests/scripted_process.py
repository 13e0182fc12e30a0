"""A process that behaves as a test scenario says: log lines on a schedule, an HTTP health
endpoint, a child process, ignored SIGTERM, an exit code. It lets the module tests exercise
the lifecycle mechanics (crash latency, time-outs, session kills) in seconds; the real
engine is exercised by the end-to-end tests.

Usage: scripted_process.py SCENARIO_JSON [ignored engine args...]
Scenario: {"lines": [[delay_s, "text"], ...], "serve_health_on": PORT or null,
           "exit_code": N or null (null: stay alive), "spawn_child": bool,
           "ignore_sigterm": bool, "client_result": PATH or null}
"""
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time


def serve_health(port):
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def write_client_result(source, argv):
    """Act as a benchmark client: copy a recorded result to where the real one would go."""
    result_dir = argv[argv.index("--result-dir") + 1]
    result_file = argv[argv.index("--result-filename") + 1]
    with open(source) as src, open(os.path.join(result_dir, result_file), "w") as dst:
        dst.write(src.read())


def main():
    scenario = json.loads(sys.argv[1])
    if scenario.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if scenario.get("spawn_child"):
        subprocess.Popen([sys.executable, "-c", "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"])
    for delay, text in scenario.get("lines", []):
        time.sleep(delay)
        if text == "@serve":
            serve_health(scenario["serve_health_on"])
            continue
        print(text, flush=True)
        with open(scenario.get("stamp_file", os.devnull), "a") as stamp:
            stamp.write("%r %s\n" % (time.time(), text))
    if scenario.get("client_result"):
        write_client_result(scenario["client_result"], sys.argv[2:])
    if scenario.get("exit_code") is not None:
        sys.exit(scenario["exit_code"])
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
