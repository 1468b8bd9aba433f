"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for driving the real
OpenHands agent loop without a key or the network.

Each request's JSON body is recorded.  The answer comes from the script of the request's `model`
(e.g. `scripted-advisor`; LiteLLM strips the `openai/` prefix): a list of steps, each either
`call(tool, **arguments)` (one tool call, in OpenAI function-calling format) or `say(text)`
(a plain assistant message, which ends an OpenHands turn).  A step may also be a function of the
request body returning a step.  When a script runs out the server answers `say("done")`.

`usage` is counted with LiteLLM's bundled cl100k tokenizer (GPT-4o's), offline, so turn limits, cost
and the tokens-per-turn figures have realistic numbers; `usages` keeps one entry per answer.
"""

import json
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Step = dict[str, Any] | Callable[[dict], dict[str, Any]]


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    """A step answering with one call of `tool` (arguments are JSON-encoded as OpenAI does)."""
    return {"tool": tool, "arguments": arguments}


def say(text: str) -> dict[str, Any]:
    """A step answering with a plain assistant message (no tool call)."""
    return {"text": text}


os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _prompt_tokens(body: dict) -> int:
    import litellm

    return litellm.token_counter(model="gpt-4o", messages=body.get("messages", []), tools=body.get("tools") or None)


def _completion_tokens(message: dict) -> int:
    import litellm

    return litellm.token_counter(model="gpt-4o", text=json.dumps({k: v for k, v in message.items() if v}))


@dataclass
class ScriptedLLM:
    """State shared with the handler: scripts per model and every request received."""

    scripts: dict[str, list[Step]] = field(default_factory=dict)
    requests: list[dict] = field(default_factory=list)
    usages: list[dict] = field(default_factory=list)  # {"model", "turn", "prompt_tokens", "completion_tokens"} per answer
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, model: str, steps: list[Step]) -> None:
        with self.lock:
            self.scripts.setdefault(model, []).extend(steps)

    def requests_for(self, model: str) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r.get("model", "").endswith(model)]

    def per_turn(self) -> list[dict]:
        """Usage summed per turn (conversation), in order of first request."""
        turns: dict[str, dict] = {}
        with self.lock:
            for u in self.usages:
                t = turns.setdefault(
                    u["turn"],
                    {
                        "model": u["model"],
                        "calls": 0,
                        "first_prompt_tokens": u["prompt_tokens"],
                        "prompt_tokens": 0,
                        "completion_tokens": 0,
                    },
                )
                t["calls"] += 1
                t["prompt_tokens"] += u["prompt_tokens"]
                t["completion_tokens"] += u["completion_tokens"]
        return list(turns.values())

    def answer(self, body: dict) -> dict:
        model = body.get("model", "")
        with self.lock:
            self.requests.append(body)
            queue = next((q for m, q in self.scripts.items() if model.endswith(m)), [])
            step = queue.pop(0) if queue else say("done")
        if callable(step):
            step = step(body)
        message: dict[str, Any] = {"role": "assistant", "content": step.get("text")}
        if "tool" in step:
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": step["tool"], "arguments": json.dumps(step["arguments"])},
                }
            ]
        prompt, completion = _prompt_tokens(body), _completion_tokens(message)
        with self.lock:
            turn = body.get("prompt_cache_key")  # OpenHands sends its conversation id: one per turn
            self.usages.append({"model": model, "turn": turn, "prompt_tokens": prompt, "completion_tokens": completion})
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "tool" in step else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }


def _handler(state: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/health", "/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in state.scripts]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            body["_headers"] = {k.lower(): v for k, v in self.headers.items()}
            answer = state.answer(body)
            try:
                self._send(200, answer)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (its timeout): the request is recorded all the same

    return Handler


class ScriptedLLMServer:
    """`ScriptedLLMServer().start()` serves on a free 127.0.0.1 port; `.base_url` ends in /v1."""

    def __init__(self) -> None:
        self.state = ScriptedLLM()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "ScriptedLLMServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def llm_server():
    """A started ScriptedLLMServer, stopped after the test."""
    server = ScriptedLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
