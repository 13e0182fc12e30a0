#!/usr/bin/env python3
"""Stand-in for `python -m sglang.launch_server`: replays an SGLang log with its own timing.

Lines are written to stdout at the times their `[YYYY-MM-DD HH:MM:SS ...]` stamps say,
divided by a speed factor; a line without a stamp (traceback, bar) goes out with the line
before it, and tqdm redraws (segments between carriage returns) are spread over the time
until the next stamped line, the way a bar fills. The HTTP port (from `--port`) is bound
when the log says uvicorn runs; `/health`, `/health_generate` and `/model_info` answer 503
until the ready line is out, then 200; `/ping` and `/v1/models` always 200. SIGTERM is handled like SGLang's
tokenizer manager (`SIGTERM received... Draining requests`, then `Gracefully exiting...`).

Environment:
  FLEETOPT_REPLAY_FIXTURE   the log to replay (required)
  FLEETOPT_REPLAY_SPEED     log seconds per real second (default 100)
  FLEETOPT_REPLAY_AFTER     when the log ends: `serve` (until SIGTERM), `hang` (the same, for
                            a crashed launcher that did not exit), `kill` (SIGKILL itself, as
                            SGLang's kill_process_tree does) or `exit:N`; default `serve`
  FLEETOPT_REPLAY_TIMES     where to write, as JSON, when each line was written and when the
                            process was signalled and ended (for latency measurements)
  FLEETOPT_REPLAY_LAUNCHED_AT  wall-clock time the wrapper exec'd this script
"""
import argparse
import datetime
import http.server
import json
import os
import re
import signal
import sys
import threading
import time

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
HTTP_UP = "Uvicorn running on "
READY = "The server is fired up and ready to roll!"
HEALTH_PATHS = ("/health", "/health_generate", "/model_info", "/get_model_info")
SIGTERM_LINE = ("SIGTERM received. signum=15 frame=<frame at 0x7f3b8c2e1a40, file "
                "'/usr/lib/python3.12/threading.py', line 359, code wait>. "
                "Draining requests and shutting down...")
GRACEFUL_LINE = "Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[]."
WATCHDOG_S = 5.0  # SGLang's sigterm watchdog polls every 5 s (log time)
POLL_S = 0.01


def log_times(lines):
    """Log time (seconds) of each line: its stamp, or the stamp of the line before it."""
    times = []
    last = None
    for line in lines:
        match = STAMP.match(line)
        if match:
            stamp = datetime.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").timestamp()
            last = stamp if last is None else max(last, stamp)
        times.append(last)
    first = next((t for t in times if t is not None), 0.0)
    return [first if t is None else t for t in times]


def spread_progress(lines, times):
    """Bars fill over the time until the next stamped line: move each redraw line there."""
    result = list(times)
    index = 0
    while index < len(lines):
        if not lines[index].startswith("\r"):
            index += 1
            continue
        end = index
        while end < len(lines) and lines[end].startswith("\r"):
            end += 1
        stop = times[end] if end < len(times) else times[index]
        for offset, position in enumerate(range(index, end)):
            result[position] = times[index] + (stop - times[index]) * offset / (end - index)
        index = end
    return result


class Replay:
    def __init__(self, path, speed, port, host):
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
            self.newline_at_end = True
        else:
            self.newline_at_end = False
        self.times = spread_progress(self.lines, log_times(self.lines))
        self.speed = speed
        self.port = port
        self.host = host
        self.started = time.time()
        self.ready = False
        self.sigterm = False
        self.record = {"launched_at": _float_env("FLEETOPT_REPLAY_LAUNCHED_AT"),
                       "started_at": self.started, "lines": [], "pid": os.getpid()}
        self.server = None

    # -- clock ---------------------------------------------------------------------
    def wait_until(self, log_time):
        """Sleep until `log_time` is due; False if SIGTERM came first."""
        due = self.started + (log_time - self.times[0]) / self.speed if self.times else self.started
        while not self.sigterm:
            remaining = due - time.time()
            if remaining <= 0:
                return True
            time.sleep(min(remaining, POLL_S))
        return False

    def log_now(self):
        origin = self.times[0] if self.times else time.time()
        return origin + (time.time() - self.started) * self.speed

    # -- output ----------------------------------------------------------------------
    def write(self, text):
        sys.stdout.write(text)
        sys.stdout.flush()

    def replay(self):
        for number, line in enumerate(self.lines, start=1):
            end_of_line = number == len(self.lines) and not self.newline_at_end
            if not self.replay_line(number, line, end_of_line):
                return False
        return True

    def replay_line(self, number, line, last_without_newline):
        start = self.times[number - 1]
        stop = self.times[number] if number < len(self.times) else start
        segments = line.split("\r")
        for index, segment in enumerate(segments):
            if not self.wait_until(start + (stop - start) * index / len(segments)):
                return False
            self.write(("\r" if index else "") + segment)
        self.write("" if last_without_newline else "\n")
        self.record["lines"].append(time.time())
        self.on_line(line)
        return True

    def on_line(self, line):
        if HTTP_UP in line or READY in line:
            self.serve_http()
        if READY in line:
            self.ready = True
            self.record["ready_at"] = time.time()

    def stamped(self, message):
        stamp = datetime.datetime.fromtimestamp(self.log_now()).strftime("%Y-%m-%d %H:%M:%S")
        return "[%s] %s\n" % (stamp, message)

    # -- HTTP --------------------------------------------------------------------------
    def serve_http(self):
        if self.server is not None:
            return
        replay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?")[0]
                if path == "/ping":
                    return self.answer(200, {"status": "ok"})
                if path == "/v1/models":  # served from the moment uvicorn runs, ready or not
                    return self.answer(200, {"object": "list", "data": [{"id": "replay", "object": "model"}]})
                if path in HEALTH_PATHS:
                    if replay.ready and not replay.sigterm:
                        return self.answer(200, {"model_path": "/models/replay", "is_generation": True})
                    return self.answer(503, {"error": "server is starting"})
                return self.answer(404, {"error": "not found"})

            def answer(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((self.host, self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    # -- ending ------------------------------------------------------------------------
    def on_sigterm(self, signum, frame):
        self.sigterm = True

    def drain_and_exit(self):
        self.record["sigterm_at"] = time.time()
        self.write(self.stamped(SIGTERM_LINE))
        time.sleep(WATCHDOG_S / self.speed)
        self.write(self.stamped(GRACEFUL_LINE))
        self.finish(kill=True)

    def after_log(self, mode):
        if mode in ("serve", "hang"):
            while not self.sigterm:
                time.sleep(POLL_S)
            return self.drain_and_exit()
        if mode == "kill":
            return self.finish(kill=True)
        return self.finish(code=int(mode.split(":", 1)[1]))

    def finish(self, kill=False, code=0):
        self.record["exited_at"] = time.time()
        path = os.environ.get("FLEETOPT_REPLAY_TIMES")
        if path:
            with open(path, "w") as handle:
                json.dump(self.record, handle)
        sys.stdout.flush()
        if kill:
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(code)


def _float_env(name):
    value = os.environ.get(name)
    try:
        return float(value) if value else None
    except ValueError:
        return None


def main():
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--host", default="127.0.0.1")
    args, _ = parser.parse_known_args()
    replay = Replay(os.environ["FLEETOPT_REPLAY_FIXTURE"],
                    float(os.environ.get("FLEETOPT_REPLAY_SPEED", "100")), args.port, args.host)
    signal.signal(signal.SIGTERM, replay.on_sigterm)
    if not replay.replay():
        return replay.drain_and_exit()
    replay.after_log(os.environ.get("FLEETOPT_REPLAY_AFTER", "serve"))


if __name__ == "__main__":
    main()
