"""An LLM whose calls would count $0 is never silent: LiteLLM cannot price its model and the
config sets no per-token prices. Loading the harness config warns of it, a `caps.dollars` cap
refuses it, and the status marks the dollars unpriced. A model LiteLLM prices, or prices set in
the config (0 included), gives none of these."""

import logging
from pathlib import Path

import pytest
import yaml
from policy_world import CFG, NOW
from test_status import TICK

from senpai.config.harness import RuntimeSettings, load_harness
from senpai.errors import ConfigError
from senpai.ledger.inbox import SteerState
from senpai.wrapper.status import build_status

HARNESS = {
    "forge": {"repo": "o/r"},
    "tracker": {"dir": "/tmp/w"},
    "fleet": {"dir": "/tmp/f"},
    "state_dir": "/tmp/s",
    "students": [{"name": "ada"}],
}
LOCAL = {"model": "openai/qwen", "base_url": "http://127.0.0.1:8080/v1"}  # a llama.cpp alias: LiteLLM has no price
FREE = {"input_cost_per_token": 0, "output_cost_per_token": 0}


def write(tmp_path: Path, advisor: dict, **more) -> Path:
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump({**HARNESS, "runtime": {"advisor": {"kind": "openhands", "llm": advisor}}, **more}))
    return path


def test_an_unpriced_model_is_warned_of_at_load(tmp_path, caplog):
    path = write(tmp_path, LOCAL)
    with caplog.at_level(logging.WARNING, logger="senpai.config.harness"):
        cfg = load_harness(path)
    (record,) = caplog.records
    assert record.getMessage() == (
        f"{path}: runtime.advisor.llm.model 'openai/qwen' has no price in LiteLLM's price map and its per-token prices "
        "are not both set (the SDK applies them only as a pair), so its calls count $0: set "
        "runtime.advisor.llm.input_cost_per_token and output_cost_per_token (dollars; 0 for a free server)"
    )
    assert cfg.unpriced_llms() == {"advisor": "openai/qwen"}


@pytest.mark.parametrize(
    "llm",
    [LOCAL | FREE, LOCAL | {"input_cost_per_token": 1e-7, "output_cost_per_token": 2e-7}, {"model": "openai/gpt-4o"}],
    ids=["free", "priced-in-config", "priced-by-litellm"],
)
def test_a_priced_model_loads_silently_even_under_a_dollars_cap(tmp_path, caplog, llm):
    with caplog.at_level(logging.WARNING):
        cfg = load_harness(write(tmp_path, llm, caps={"dollars": 5.0}))
    assert caplog.records == [] and cfg.unpriced_llms() == {} and cfg.caps.dollars == 5.0


def test_one_price_alone_is_not_a_price(tmp_path, caplog):
    """The SDK applies the config's prices only as a pair: one alone leaves the calls at $0."""
    with caplog.at_level(logging.WARNING):
        cfg = load_harness(write(tmp_path, LOCAL | {"input_cost_per_token": 1e-7}))
    assert cfg.unpriced_llms() == {"advisor": "openai/qwen"} and "has no price" in caplog.text


def test_a_dollars_cap_refuses_an_unpriced_model(tmp_path):
    path = write(tmp_path, LOCAL, caps={"dollars": 5.0})
    with pytest.raises(ConfigError) as e:
        load_harness(path)
    assert str(e.value) == (
        f"{path}: caps.dollars (5) cannot be enforced: runtime.advisor.llm.model 'openai/qwen' has no price in "
        "LiteLLM's price map and its per-token prices are not both set (the SDK applies them only as a pair), so its "
        "calls count $0: set runtime.advisor.llm.input_cost_per_token and output_cost_per_token (dollars; 0 for a free "
        "server)"
    )


def test_the_status_marks_the_dollars_unpriced_next_to_their_cap():
    runtime = RuntimeSettings.model_validate({"advisor": {"kind": "openhands", "llm": LOCAL}, "student": "search"})
    cfg = CFG.model_copy(update={"runtime": runtime})
    capped = SteerState(caps={"dollars": 5.0})  # a cap raised by `/senpai caps`, not the config's
    s = build_status(cfg, [], [], capped, NOW, TICK, None)
    assert s.caps.unpriced == {"advisor": "openai/qwen"}
    assert "- spent: $0.00 of $5.00 LLM (by `/senpai caps`) (**unpriced**: advisor openai/qwen counts $0), " in s.markdown()
    priced = CFG.model_copy(update={"runtime": runtime.model_validate({"advisor": {"kind": "openhands", "llm": LOCAL | FREE}})})
    s = build_status(priced, [], [], capped, NOW, TICK, None)
    assert s.caps.unpriced == {} and "unpriced" not in s.markdown() and "$0.00 of $5.00 LLM (by `/senpai caps`), " in s.markdown()
