"""A scripted engine: a real process on a real port that starts up as a captured engine log says and
serves the OpenAI-compatible API with the timing a test plants, so that what fleetopt decides from
it (verdicts, capacity, the recommendation, faults) is exact on any host.

Usage: server.py SCENARIO_JSON_PATH [python's -m MODULE] ENGINE_ARGS...
It receives the engine's real command line (fleetopt renders it for the real engine); the flags it
understands shape what it logs and how it serves, the others are only echoed in its log.

It replays the captured start-up log up to its ready line, with these lines rewritten from the
arguments it got, so that fleetopt's reading of the log (phases, effective configuration) sees what
a real engine of that configuration would state:
- vLLM: `non-default args: {...}`, `Initializing a V1 LLM engine (...) with config: ...` (model,
  dtype, max_seq_len, enforce_eager, kv_cache_dtype, prefix caching, compilation mode),
  `Starting vLLM server on http://HOST:PORT`, the API server's pid;
- SGLang: `server_args=ServerArgs(...)` (host, port, model_path) and the Uvicorn address.
The HTTP server is up from the line that names the server's address (vLLM) or from the first
Uvicorn line (SGLang), as the real servers bind their port late. On SIGTERM it logs the log's
shutdown lines and exits 0.

Scenario (JSON; every key optional):
  "log": PATH                    captured start-up log (default: the vLLM CPU one in tests/fixtures)
  "startup_s": S                 the replay's length, the log's own pacing scaled to it (default 2)
  "ttft_s": S                    time to the first token of a request once it is scheduled (default 0.02)
  "per_token_s": S               time per output token after the first (default 0.01)
  "max_num_seqs": N              requests served at once when the engine is given no --max-num-seqs
                                 (default 256, vLLM's); --max-num-seqs N caps them at N, exactly: the
                                 others wait, first come first served, their wait counted in their
                                 time to first token
  "effects": [{"when_flags": {FLAG: VALUE}, "ttft_factor": F, "per_token_factor": F}, ...]
                                 planted effects of a variant's flags (VALUE true: the flag is given)
  "fail": {"when_flags": {...}, "kind": "crash" | "hang", "at": REGEX or "serving",
           "after_s": S, "lines": [TEXT, ...] or "lines_from": PATH, "exit_code": N}
                                 at the first replayed line matching REGEX (before it is logged), or
                                 S seconds after ready ("serving"): a crash logs the lines and exits
                                 with the code; a hang logs nothing more and never becomes ready
  "gpu_file": PATH, "gpu_hold_mib": N, "gpu_release_delay_s": S   as in tests/scripted_process.py
  "launches_file": PATH          one line per start-up appended there (a test counts its launches)
"""
import ast
import collections
import http.server
import json
import os
import re
import signal
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import scripted_process  # noqa: E402  (tests/: the GPU memory file of fake_nvidia_smi.py)

VLLM_LOG = os.path.join(os.path.dirname(HERE), "fixtures", "vllm", "startup-compiled-0.32.0.log")
STAMP = re.compile(r"(\d\d-\d\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
# The ready line: SGLang's follows Uvicorn's "Application startup complete." (after its own warm-up request).
READY = (re.compile(r"The server is fired up and ready to roll!"), re.compile(r"Application startup complete\."))
SHUTDOWN = re.compile(r"\[shutdown\]|Shutting down|Waiting for application shutdown|Application shutdown complete")


class Slots(object):
    """At most `count` requests served at once, admitted first come, first served, as the engines' schedulers do.

    A freed slot is handed to the request that has waited longest. (threading.Semaphore lets a request that arrives
    as a slot is freed take it before the one woken for it: that one could be overtaken again and again.)"""

    def __init__(self, count):
        self.free = int(count)
        self.queue = collections.deque()
        self.lock = threading.Lock()

    @property
    def waiting(self):
        with self.lock:
            return len(self.queue)

    def acquire(self):
        with self.lock:
            if self.free and not self.queue:
                self.free -= 1
                return
            turn = threading.Event()
            self.queue.append(turn)
        turn.wait()

    def release(self):
        with self.lock:
            if self.queue:
                self.queue.popleft().set()
            else:
                self.free += 1

    def __enter__(self):
        self.acquire()

    def __exit__(self, *_):
        self.release()


def parse_args(argv):
    """The engine arguments as {flag: value} (True for a flag without a value), and the module it was run as."""
    module, args = None, list(argv)
    if args[:1] == ["-m"]:
        module, args = args[1], args[2:]
    flags, index = {}, 0
    while index < len(args):
        arg = args[index]
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            flags[key] = value
        elif arg.startswith("-") and (index + 1 == len(args) or args[index + 1].startswith("--")):
            flags[arg] = True
        elif arg.startswith("-"):
            flags[arg] = args[index + 1]
            index += 1
        index += 1
    return module, flags


def matches(when, flags):
    for flag, value in (when or {}).items():
        given = flags.get(flag)
        if value is True:
            if given is None:
                return False
        elif str(given) != str(value):
            return False
    return True


def literal(value):
    if value is True:
        return True
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


class Engine(object):
    def __init__(self, scenario, module, flags):
        self.scenario, self.module, self.flags = scenario, module, flags
        self.sglang = bool(module and module.startswith("sglang")) or "--model-path" in flags
        self.host = str(flags.get("--host", "127.0.0.1"))
        self.port = int(flags.get("--port", 30000 if self.sglang else 8000))
        self.model = str(flags.get("--model-path" if self.sglang else "--model", flags.get("--model", "")))
        self.served = str(flags.get("--served-model-name", self.model))
        self.ttft_s = float(scenario.get("ttft_s", 0.02))
        self.per_token_s = float(scenario.get("per_token_s", 0.01))
        for effect in scenario.get("effects", []):
            if matches(effect.get("when_flags"), flags):
                self.ttft_s *= float(effect.get("ttft_factor", 1))
                self.per_token_s *= float(effect.get("per_token_factor", 1))
        seqs = flags.get("--max-running-requests" if self.sglang else "--max-num-seqs", scenario.get("max_num_seqs", 256))
        self.slots = Slots(seqs)
        fail = scenario.get("fail")
        self.fail = fail if fail and matches(fail.get("when_flags"), flags) else None
        self.api_key = os.environ.get("SGLANG_API_KEY" if self.sglang else "VLLM_API_KEY")
        self.shutdown_lines = []
        self.out_lock = threading.Lock()

    def say(self, text):
        with self.out_lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    # --- the start-up log -------------------------------------------------------------------------------------------
    def rewrite(self, line):
        pid = str(os.getpid())
        line = re.sub(r"\(APIServer pid=\d+\)", "(APIServer pid=%s)" % pid, line)
        line = re.sub(r"Started server process \[\d+\]", "Started server process [%s]" % pid, line)
        if "non-default args: {" in line:
            head = line.split("non-default args: ", 1)[0]
            args = {"host": self.host, "port": self.port, "model": self.model}
            for flag, value in self.flags.items():
                if flag in ("--host", "--port", "--model"):
                    continue
                key = flag.lstrip("-").replace("-", "_")
                args[key] = [value] if key == "served_model_name" else literal(value)
            return head + "non-default args: %r" % args
        if "Initializing a V1 LLM engine" in line and "with config:" in line:
            eager = "--enforce-eager" in self.flags
            dtype = str(self.flags.get("--dtype", "auto"))
            dtype = "bfloat16" if dtype in ("auto", "bf16") else dtype
            subs = [(r"model='[^']*'", "model=%r" % self.model), (r"tokenizer='[^']*'", "tokenizer=%r" % self.model),
                    (r"dtype=torch\.\w+", "dtype=torch.%s" % dtype),
                    (r"max_seq_len=\d+", "max_seq_len=%s" % self.flags.get("--max-model-len", 1024)),
                    (r"enforce_eager=\w+", "enforce_eager=%s" % eager),
                    (r"kv_cache_dtype=\w+", "kv_cache_dtype=%s" % self.flags.get("--kv-cache-dtype", "auto")),
                    (r"served_model_name=[^,]*,", "served_model_name=%s," % self.served),
                    (r"enable_prefix_caching=\w+", "enable_prefix_caching=%s"
                     % ("--no-enable-prefix-caching" not in self.flags))]
            if eager:
                subs.append((r"'mode': <CompilationMode\.\w+: \d+>", "'mode': <CompilationMode.NONE: 0>"))
            for pattern, value in subs:
                line = re.sub(pattern, lambda _m, v=value: v, line, count=1)
            return line
        if "Starting vLLM server on http" in line:
            return re.sub(r"http://\S+", "http://%s:%d" % (self.host, self.port), line)
        if "server_args=ServerArgs(" in line:
            line = re.sub(r"host='[^']*'", "host=%r" % self.host, line, count=1)
            line = re.sub(r"port=\d+", "port=%d" % self.port, line, count=1)
            return re.sub(r"model_path='[^']*'", "model_path=%r" % self.model, line, count=1)
        if "Uvicorn running on http" in line:
            return re.sub(r"http://\S+", "http://%s:%d" % (self.host, self.port), line)
        return line

    def startup_lines(self):
        """The captured log up to its ready line, each with its delay; and the log's shutdown lines."""
        with open(self.scenario.get("log", VLLM_LOG), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
        pattern = next(p for p in READY if any(p.search(line) for line in lines))
        ready = next(i for i, line in enumerate(lines) if pattern.search(line))
        self.shutdown_lines = [line for line in lines[ready + 1:] if SHUTDOWN.search(line)]
        stamps = []
        for line in lines[:ready + 1]:
            found = STAMP.search(line)
            stamps.append(time.mktime(time.strptime(found.group(1)[-14:], "%m-%d %H:%M:%S")) if found else None)
        known = [s for s in stamps if s is not None]
        span = (known[-1] - known[0]) if len(known) > 1 else 0
        total = float(self.scenario.get("startup_s", 2.0))
        paced, last = [], known[0] if known else None
        for line, stamp in zip(lines[:ready + 1], stamps):
            delay = 0.0
            if stamp is not None and span > 0:
                delay, last = (stamp - last) / span * total, stamp
            elif span == 0:
                delay = total / (ready + 1)
            paced.append((delay, line))
        return paced

    def crash(self):
        fail = self.fail
        lines = fail.get("lines")
        if lines is None and fail.get("lines_from"):
            with open(fail["lines_from"], encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        for line in lines or []:
            self.say(line)
        os._exit(int(fail.get("exit_code", 1)))

    def hang(self):
        while True:
            time.sleep(1)

    def start(self):
        if self.scenario.get("launches_file"):
            with open(self.scenario["launches_file"], "a") as handle:
                handle.write("%d %s\n" % (os.getpid(), json.dumps(self.flags, sort_keys=True)))
        if self.scenario.get("gpu_file"):
            scripted_process.hold_gpu_memory(self.scenario)
        signal.signal(signal.SIGTERM, self.on_sigterm)
        at = (self.fail or {}).get("at")
        serving = False
        for delay, line in self.startup_lines():
            time.sleep(delay)
            if at and at != "serving" and re.search(at, line):
                self.crash() if self.fail.get("kind", "crash") == "crash" else self.hang()
            line = self.rewrite(line)
            if not serving and ("Starting vLLM server on http" in line or line.startswith("INFO:     Started server process")
                                or "Uvicorn running on" in line or any(p.search(line) for p in READY)):
                self.serve()
                serving = True
            self.say(line)
        if at == "serving":
            time.sleep(float(self.fail.get("after_s", 0)))
            self.crash() if self.fail.get("kind", "crash") == "crash" else self.hang()
        while True:
            time.sleep(1)

    def on_sigterm(self, *_):
        for line in self.shutdown_lines:
            self.say(line)
        os._exit(0)

    # --- serving ----------------------------------------------------------------------------------------------------
    def serve(self):
        engine = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, body, content_type="application/json"):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                engine.say('INFO:     %s:%d - "%s %s HTTP/1.1" %d' % (self.client_address + (self.command, self.path, status)))

            def authorized(self):
                if engine.api_key and self.path.startswith("/v1") \
                        and self.headers.get("Authorization") != "Bearer %s" % engine.api_key:
                    self.answer(401, {"error": "Unauthorized"})
                    return False
                return True

            def do_GET(self):
                path = self.path.split("?")[0]
                if not self.authorized():
                    return
                if path in ("/health", "/ping", "/health_generate"):
                    self.answer(200, b"", "text/plain")
                elif path == "/v1/models":
                    self.answer(200, {"object": "list", "data": [
                        {"id": engine.served, "object": "model", "created": int(time.time()), "owned_by": "vllm",
                         "root": engine.model, "max_model_len": int(engine.flags.get("--max-model-len", 1024))}]})
                elif path == "/metrics":
                    self.answer(200, b"", "text/plain")
                elif path == "/version":
                    self.answer(200, {"version": "0.32.0"})
                else:
                    self.answer(404, {"detail": "Not Found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                path = self.path.split("?")[0]
                if not self.authorized():
                    return
                if path == "/tokenize":
                    prompt = body.get("prompt", "")
                    tokens = list(range(len(prompt.split()) if isinstance(prompt, str) else len(prompt)))
                    self.answer(200, {"tokens": tokens, "count": len(tokens), "max_model_len": 1024})
                elif path == "/v1/completions":
                    self.complete(body)
                else:
                    self.answer(404, {"detail": "Not Found"})

            def chunk(self, data):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def complete(self, body):
                tokens = int(body.get("max_tokens") or 16)
                rid, created = "cmpl-%s" % uuid.uuid4().hex, int(time.time())

                def piece(text, finish=None):
                    return {"id": rid, "object": "text_completion", "created": created, "model": engine.served,
                            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish,
                                         "stop_reason": None}], "usage": None}
                usage = {"completion_tokens": tokens}
                with engine.slots:  # at most max-num-seqs requests are served; the others wait here
                    if not body.get("stream"):
                        time.sleep(engine.ttft_s + engine.per_token_s * (tokens - 1))
                        whole = piece(" tok" * tokens, "length")
                        whole["usage"] = usage
                        self.answer(200, whole)
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    start = time.time()
                    for number in range(tokens):
                        # Token k is due at ttft + k * per_token after the request was scheduled: no drift.
                        due = start + engine.ttft_s + number * engine.per_token_s
                        time.sleep(max(0.0, due - time.time()))
                        data = piece(" tok", "length" if number == tokens - 1 else None)
                        self.chunk(b"data: " + json.dumps(data).encode() + b"\n\n")
                    if (body.get("stream_options") or {}).get("include_usage"):
                        tail = {"id": rid, "object": "text_completion", "created": created, "model": engine.served,
                                "choices": [], "usage": usage}
                        self.chunk(b"data: " + json.dumps(tail).encode() + b"\n\n")
                    self.chunk(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                engine.say('INFO:     %s:%d - "POST /v1/completions HTTP/1.1" 200 OK' % self.client_address)

        server = http.server.ThreadingHTTPServer((self.host, self.port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()


def main():
    with open(sys.argv[1]) as handle:
        scenario = json.load(handle)
    module, flags = parse_args(sys.argv[2:])
    Engine(scenario, module, flags).start()


if __name__ == "__main__":
    main()
