"""A process that behaves as a test scenario says: log lines on a schedule, an HTTP health
endpoint, a child process, ignored SIGTERM, an exit code. It lets the module tests exercise
the lifecycle mechanics (crash latency, time-outs, session kills) in seconds; the real
engine is exercised by the end-to-end tests.

Usage: scripted_process.py SCENARIO_JSON [ignored engine args...]; or, as a benchmark client
module run in fleetopt's kept client, `run(scenario, argv)`.
Scenario: {"lines": [[delay_s, "text"], ...], "serve_health_on": PORT or null,
           ("@serve": start the health endpoint; "@await": wait until the file "go_file" exists),
           "exit_code": N or null (null: stay alive), "spawn_child": bool (a child that ignores
           SIGTERM, in place before the lines), "child_sigterm_file": PATH (the child creates it on
           each SIGTERM it ignores),
           "ignore_sigterm": bool, "slow_paths": {PATH: S} (GET PATH answers after S seconds),
           "client_result": PATH or null,
           "client_results": [PATH, ...] (the one at the run's --seed, modulo their number),
           "client_results_by_seed": {SEED: PATH} (a run with that --seed; others: client_result),
           "busy_s": S (spin for S s of CPU time),
           "echo_args": bool (print argv the way SGLang logs server_args),
           "escape_holding_port": PORT (a child leaves the session and listens there),
           "env_file": PATH (its environment, as JSON), "compile_into": VAR (write a file into the
           folder that variable names, as a compiler filling its cache does),
           "gpu_file": PATH, "gpu_hold_mib": N, "gpu_release_delay_s": S or null
           (hold "GPU memory" in the file fake_nvidia_smi.py reads; after this process ends the
           memory returns S seconds later, like NVML after a kill; null: it never returns),
           "imports_file": PATH (a client module appends the name it was imported under: its own,
           or __main__ for a run), "import_go_file": PATH (an import by its own name waits until
           it exists, as a slow import of a real client would)}
"""
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time


def serve_health(port, slow_paths=None):
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep((slow_paths or {}).get(self.path.split("?")[0], 0))
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


def hold_gpu_memory(scenario):
    with open(scenario["gpu_file"], "w") as handle:
        json.dump({"0": scenario["gpu_hold_mib"]}, handle)
    delay = scenario.get("gpu_release_delay_s")
    if delay is None:
        return
    # A detached releaser waits for this process to end, then gives the memory back.
    release = ("import json,os,sys,time\n"
               "pid, path, delay = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])\n"
               "while os.path.exists('/proc/%d' % pid) and open('/proc/%d/stat' % pid).read().split(')')[-1].split()[0] != 'Z':\n"
               "    time.sleep(0.02)\n"
               "time.sleep(delay)\n"
               "json.dump({'0': 0}, open(path, 'w'))\n")
    subprocess.Popen([sys.executable, "-c", release, str(os.getpid()), scenario["gpu_file"], str(delay)],
                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def spawn_child(scenario):
    """A child that ignores SIGTERM and outlives this process; it has its handler in place before
    this returns, so a stop at any later moment finds it as the scenario says."""
    ready_r, ready_w = os.pipe()
    code = ("import os,signal,sys,time\n"
            "path = sys.argv[2]\n"
            "signal.signal(signal.SIGTERM, (lambda *_: open(path, 'a').close()) if path else signal.SIG_IGN)\n"
            "os.write(int(sys.argv[1]), b'.')\n"
            "os.close(int(sys.argv[1]))\n"
            "time.sleep(3600)\n")
    subprocess.Popen([sys.executable, "-c", code, str(ready_w), scenario.get("child_sigterm_file") or ""],
                     pass_fds=(ready_w,))
    os.close(ready_w)
    os.read(ready_r, 1)
    os.close(ready_r)


def escape_holding_port(port):
    code = ("import os,socket,time\nos.setsid()\ns=socket.socket()\n"
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('127.0.0.1', %d))\ns.listen()\n"
            "time.sleep(120)\n" % port)
    subprocess.Popen([sys.executable, "-c", code])


def main():
    run(json.loads(sys.argv[1]), sys.argv[2:])


def imported(scenario, name):
    """As a benchmark client module: note the import, and let one by the module's own name (a preload,
    not a run) wait for its go file."""
    if scenario.get("imports_file"):
        with open(scenario["imports_file"], "a") as handle:
            handle.write(name + "\n")
    if name != "__main__" and scenario.get("import_go_file"):
        while not os.path.exists(scenario["import_go_file"]):
            time.sleep(0.02)


def run(scenario, args):
    """Play the scenario; `args` are the engine (or client) arguments it was given."""
    if scenario.get("echo_args"):
        print("[2026-03-02 10:15:03] server_args=ServerArgs(argv=%r)" % (args,), flush=True)
    if scenario.get("env_file"):
        with open(scenario["env_file"], "w") as handle:
            json.dump(dict(os.environ), handle)
    if scenario.get("compile_into"):
        with open(os.path.join(os.environ[scenario["compile_into"]], "kernel-%d.so" % os.getpid()), "w") as handle:
            handle.write("compiled")
    if scenario.get("gpu_file"):
        hold_gpu_memory(scenario)
    if scenario.get("escape_holding_port"):
        escape_holding_port(scenario["escape_holding_port"])
    if scenario.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if scenario.get("spawn_child"):
        spawn_child(scenario)
    for delay, text in scenario.get("lines", []):
        time.sleep(delay)
        if text == "@serve":
            serve_health(scenario["serve_health_on"], scenario.get("slow_paths"))
            continue
        if text == "@await":
            while not os.path.exists(scenario["go_file"]):
                time.sleep(0.02)
            continue
        # The stamp is taken just before the write: the line cannot be in the log earlier.
        at = time.time()
        print(text, flush=True)
        with open(scenario.get("stamp_file", os.devnull), "a") as stamp:
            stamp.write("%r %s\n" % (at, text))
    spin_until = time.process_time() + scenario.get("busy_s", 0)
    while time.process_time() < spin_until:
        pass
    by_seed = scenario.get("client_results_by_seed") or {}
    if by_seed.get(args[args.index("--seed") + 1] if "--seed" in args else None):
        write_client_result(by_seed[args[args.index("--seed") + 1]], args)
    elif scenario.get("client_result"):
        write_client_result(scenario["client_result"], args)
    if scenario.get("client_results"):
        results = scenario["client_results"]
        write_client_result(results[int(args[args.index("--seed") + 1]) % len(results)], args)
    if scenario.get("exit_code") is not None:
        sys.exit(scenario["exit_code"])
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
