"""The turn guard: one agent turn's limits (`runtime.<role>.turn`: LLM calls, tokens, dollars and
wall time), enforced by the harness.

`TurnGuard` watches every conversation event.  Once a limit is reached it pauses the
conversation, which takes effect before the next LLM call; a timer does the same at the wall-time
limit.  Spend is read from the SDK's own metrics (LiteLLM's cost; with `input/output_cost_per_token`
set for models LiteLLM does not price).  The turn then posts its report
(a `senpai-budget` record: the kind's name on record since before the rename).
"""

import json
import threading
import time

from openhands.sdk.event import ActionEvent

from senpai.agents.openhands.trace import ToolCall
from senpai.config.harness import TurnLimits
from senpai.ledger.blocks import TurnUsage

GROWTH = 2  # a stopped turn asks for this multiple of each exhausted limit


class TurnGuard:
    def __init__(self, turn: TurnLimits) -> None:
        self.turn = turn
        self.exhausted: list[str] = []
        self.tried: list[str] = []
        self.calls: list[ToolCall] = []  # the same tool calls, with the LLM response that asked for each
        self._start = time.monotonic()
        self._conversation = None
        self._timer: threading.Timer | None = None

    def bind(self, conversation) -> None:
        """Watch `conversation` (a LocalConversation) and start the wall-time timer."""
        self._conversation = conversation
        self._timer = threading.Timer(self.turn.wall_seconds, self._stop, args=("wall_seconds",))
        self._timer.daemon = True
        self._timer.start()

    def close(self) -> None:
        if self._timer:
            self._timer.cancel()

    def usage(self) -> TurnUsage:
        """What the conversation spent so far (all its LLMs), and this turn's wall time."""
        if self._conversation is None:
            return TurnUsage()
        m = self._conversation.conversation_stats.get_combined_metrics()
        t = m.accumulated_token_usage
        tokens = (t.prompt_tokens + t.completion_tokens) if t else 0
        return TurnUsage(
            llm_calls=len(m.response_latencies),
            tokens=tokens,
            dollars=round(m.accumulated_cost, 6),
            wall_seconds=round(time.monotonic() - self._start, 3),
        )

    def __call__(self, event) -> None:
        """Conversation callback: note tool calls, stop when a limit is reached."""
        if isinstance(event, ActionEvent):
            args = _short(event.tool_call.arguments if event.tool_call else "")
            self.tried.append(f"{event.tool_name}({args})")
            self.calls.append(ToolCall(str(event.llm_response_id), event.tool_name, args))
        u, b = self.usage(), self.turn
        over = [
            name
            for name, spent, limit in [
                ("llm_calls", u.llm_calls, b.llm_calls),
                ("tokens", u.tokens, b.tokens),
                ("dollars", u.dollars, b.dollars),
            ]
            if spent >= limit
        ]
        for name in over:
            self._stop(name)

    def _stop(self, name: str) -> None:
        if name not in self.exhausted:
            self.exhausted.append(name)
        if self._conversation is not None:
            self._conversation.pause()

    def limits(self) -> TurnUsage:
        b = self.turn
        return TurnUsage(llm_calls=b.llm_calls, tokens=b.tokens, dollars=b.dollars, wall_seconds=b.wall_seconds)

    def needed(self) -> TurnUsage:
        """Turn limits to ask for: each exhausted limit times GROWTH, the others as they were."""
        b = self.limits().model_dump()
        return TurnUsage(**{k: v * GROWTH if k in self.exhausted else v for k, v in b.items()})


def _short(arguments: str, limit: int = 120) -> str:
    try:
        data = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        data = arguments
    text = json.dumps(data, sort_keys=True) if not isinstance(data, str) else data
    return text if len(text) <= limit else text[:limit] + "..."
