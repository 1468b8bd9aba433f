"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for driving the real
OpenHands agent loop without a key or the network.

Each request's JSON body is recorded.  The answer comes from the script of the request's `model`
(e.g. `scripted-advisor`; LiteLLM strips the `openai/` prefix): a list of steps, each either
`call(tool, **arguments)` (one tool call, in OpenAI function-calling format) or `say(text)`
(a plain assistant message, which ends an OpenHands turn).  A step may also be a function of the
request body returning a step.  When a script runs out the server answers `say("done")`.

`usage` is estimated from characters (4 per token) so budgets and cost have numbers to work on;
the estimate is deterministic for a given request.
"""

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = dict[str, Any] | Callable[[dict], dict[str, Any]]


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    """A step answering with one call of `tool` (arguments are JSON-encoded as OpenAI does)."""
    return {"tool": tool, "arguments": arguments}


def say(text: str) -> dict[str, Any]:
    """A step answering with a plain assistant message (no tool call)."""
    return {"text": text}


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class ScriptedLLM:
    """State shared with the handler: scripts per model and every request received."""

    scripts: dict[str, list[Step]] = field(default_factory=dict)
    requests: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, model: str, steps: list[Step]) -> None:
        with self.lock:
            self.scripts.setdefault(model, []).extend(steps)

    def requests_for(self, model: str) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r.get("model", "").endswith(model)]

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
        prompt = _tokens(json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", [])))
        completion = _tokens(json.dumps(message))
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
            self._send(200, state.answer(body))

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
