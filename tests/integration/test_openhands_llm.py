"""An openhands role's LLM settings reach the wire: the scripted server records each request the
OpenHands SDK sends through LiteLLM (`make_llm`), and answers late when its script says so.

The SDK (several seconds) is imported where it is used, so collecting the suite does not."""

import time

import pytest
from llm_server import say

from senpai.config.harness import OpenHandsRuntimeSettings
from senpai.config.roles import Role


def runtime(base_url: str, name: str, wall_seconds: int = 300, **llm) -> OpenHandsRuntimeSettings:
    """An openhands runtime on the scripted server, its model served as `name`, with `llm` settings."""
    settings = {"model": f"openai/{name}", "base_url": base_url, **llm}
    return OpenHandsRuntimeSettings.model_validate({"llm": settings, "turn": {"wall_seconds": wall_seconds}})


def ask(rt: OpenHandsRuntimeSettings) -> None:
    from openhands.sdk import Message, TextContent

    from senpai.agents.openhands.llm import make_llm

    make_llm(rt, Role.ADVISOR, None).completion(messages=[Message(role="user", content=[TextContent(text="hi")])])


def test_the_output_cap_and_the_extra_body_reach_the_request(llm_server):
    ask(
        runtime(
            llm_server.base_url, "capped", max_output_tokens=123, extra_body={"tool_choice": "required", "cache_prompt": True}
        )
    )
    (body,) = llm_server.state.requests_for("capped")
    assert (body["max_completion_tokens"], body["tool_choice"], body["cache_prompt"]) == (123, "required", True)
    ask(runtime(llm_server.base_url, "uncapped"))  # unset: a model LiteLLM does not know gets no cap
    (body,) = llm_server.state.requests_for("uncapped")
    assert {"max_completion_tokens", "max_tokens", "tool_choice"}.isdisjoint(body)


def test_a_call_past_its_timeout_is_cut_and_made_num_retries_plus_one_times_in_all(llm_server):
    def late(body: dict) -> dict:
        time.sleep(5)  # past the 1 s timeout: the SDK gives up on the attempt, and then on the call
        return say("too late")

    from openhands.sdk.llm.exceptions import LLMTimeoutError

    llm_server.state.script("slow", [late] * 5)
    with pytest.raises(LLMTimeoutError):
        ask(runtime(llm_server.base_url, "slow", timeout=1, num_retries=1))
    assert len(llm_server.state.requests_for("slow")) == 2  # the first attempt and one retry, after an 8 s wait


def test_an_unset_timeout_is_the_sdks_300_s_cut_to_fit_the_turn(llm_server):
    from senpai.agents.openhands.llm import make_llm

    assert make_llm(runtime(llm_server.base_url, "m", wall_seconds=1800), Role.ADVISOR, None).timeout == 300
    assert make_llm(runtime(llm_server.base_url, "m", wall_seconds=300), Role.ADVISOR, None).timeout == 92
