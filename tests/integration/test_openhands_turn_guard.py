"""The turn guard (TurnGuard) reads the SDK's own metrics and pauses the conversation at each kind of limit.

The guard and the SDK (several seconds) are imported by `_guard`, so collecting the suite does not import them."""

import time
from typing import TYPE_CHECKING

from senpai.config.harness import TurnLimits

if TYPE_CHECKING:
    from senpai.agents.openhands.turn_guard import TurnGuard


class FakeStats:
    def __init__(self, metrics) -> None:
        self.metrics = metrics

    def get_combined_metrics(self):
        return self.metrics


class FakeConversation:
    """The two things the guard uses of a LocalConversation: its stats and pause()."""

    def __init__(self) -> None:
        from openhands.sdk.llm.utils.metrics import Metrics  # the SDK's real metrics

        self.metrics = Metrics(model_name="m")
        self.conversation_stats = FakeStats(self.metrics)
        self.paused = 0

    def pause(self) -> None:
        self.paused += 1

    def respond(self, prompt: int, completion: int, dollars: float) -> None:
        self.metrics.add_token_usage(prompt, completion, 0, 0, 0, response_id=f"r{len(self.metrics.response_latencies)}")
        self.metrics.add_response_latency(0.1, f"r{len(self.metrics.response_latencies)}")
        self.metrics.add_cost(dollars)


def _guard(**limits) -> tuple["TurnGuard", FakeConversation]:
    from senpai.agents.openhands.turn_guard import TurnGuard  # first: it sets the offline LiteLLM env

    guard, conv = TurnGuard(TurnLimits(**limits)), FakeConversation()
    guard.bind(conv)
    return guard, conv


def test_tokens_limit_pauses_and_is_reported():
    guard, conv = _guard(tokens=1000)
    conv.respond(600, 100, 0.0)
    guard(object())
    assert guard.exhausted == [] and conv.paused == 0
    conv.respond(300, 50, 0.0)
    guard(object())
    assert guard.exhausted == ["tokens"] and conv.paused == 1
    assert guard.usage().tokens == 1050 and guard.needed().tokens == 2000 and guard.needed().llm_calls == 60
    guard.close()


def test_dollars_limit_uses_the_sdk_cost():
    guard, conv = _guard(dollars=0.05)
    conv.respond(10, 10, 0.03)
    conv.respond(10, 10, 0.03)
    guard(object())
    assert guard.exhausted == ["dollars"] and guard.usage().dollars == 0.06 and guard.usage().llm_calls == 2
    guard.close()


def test_wall_time_limit_pauses_from_the_timer():
    guard, conv = _guard(wall_seconds=1)
    deadline = time.monotonic() + 10
    while not guard.exhausted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert guard.exhausted == ["wall_seconds"] and conv.paused == 1
