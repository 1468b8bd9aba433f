"""The time limits: each role's deadline and the limits inside it, from the config; a setting whose
inner limit does not fit its outer one is refused when the config loads, naming the settings."""

import logging
from pathlib import Path

import pytest
import yaml

from senpai.config.harness import HarnessConfig, load_harness
from senpai.config.target import TargetConfig
from senpai.config.time_limits import ForgeRetries, GitRetries, LLMCall, Relaunch, StudentLimits, TimeLimits, VerifierSteps
from senpai.errors import ConfigError
from senpai.ledger.blocks import TurnUsage

HARNESS = {
    "forge": {"repo": "o/r"},
    "tracker": {"dir": "/tmp/w"},
    "fleet": {"dir": "/tmp/f"},
    "state_dir": "/tmp/s",
    "students": [{"name": "ada"}],
}
TARGET = {  # every compute budget and holdout setting at its default
    "name": "t",
    "train": "python train.py",
    "metric": {"name": "acc", "direction": "maximize"},
    "params": {"file": "params.json", "space": {"w": {"type": "float", "low": 0.0, "high": 1.0}}},
    "holdout": {"command": "python score.py {artifact} {holdout}", "files": ["score.py"], "metric": "acc", "min_floor": 0.01},
}
OPENHANDS = {"kind": "openhands", "llm": {"model": "m"}}
KUBERNETES = {
    "backend": "kubernetes",
    "namespace": "research",
    "images": {role: f"senpai/{role}:0.1.0" for role in ("advisor", "student", "verifier")},
    "pvc": "senpai-data",
    "config_map": "senpai-config",
    "ttl_seconds_after_finished": 1800,
    "secret_env": [{"env": "LLM_API_KEY", "secret": "llm", "key": "k"}, {"env": "GITHUB_TOKEN", "secret": "gh", "key": "t"}],
}


def harness(**changes) -> HarnessConfig:
    return HarnessConfig.model_validate({**HARNESS, **changes})


def target(**changes) -> TargetConfig:
    data = yaml.safe_load(yaml.safe_dump(TARGET))
    for key, value in changes.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return TargetConfig.model_validate(data)


def test_the_table_for_the_defaults() -> None:
    b = TimeLimits.of(harness().times(), target())
    assert b.advisor.deadline == 600 and b.advisor.turn is None
    assert b.student == StudentLimits(deadline=600, run=600, train=540, post=60, turn=None, attempts=2)
    # 2 sides x 3 seeds x (train 600 + score 600) + 300: the verifier's runs fit its deadline
    assert b.verifier.steps == VerifierSteps(train=600, score=600, test=None, seeds=3)
    assert b.verifier.deadline == 7500
    assert b.relaunch == Relaunch(runs=3, advisor_runs=3, backoff_seconds=15) and [b.relaunch.wait(k) for k in (1, 2)] == [15, 30]
    assert b.git == GitRetries(attempts=5, backoff_seconds=1, max_wait_seconds=30, total_seconds=120)
    assert b.forge == ForgeRetries(attempts=4, backoff_seconds=0.5, max_wait_seconds=30, timeout_seconds=30)
    assert [b.deadline(role) for role in ("advisor", "student", "verifier")] == [600, 600, 7500]


def test_an_agent_turn_is_inside_its_jobs_deadline() -> None:
    b = TimeLimits.of(harness(runtime={"advisor": OPENHANDS, "student": OPENHANDS}).times(), target())
    assert (b.advisor.deadline, b.advisor.turn) == (1800 + 300, 1800)  # the turn's own stop and report come first
    assert (b.student.deadline, b.student.turn, b.student.train) == (600 + 1800, 1800, 540)


def test_a_student_job_holds_a_full_training_run_per_arm() -> None:
    b = TimeLimits.of(harness().times(), target())
    assert [b.deadline("student", arms) for arms in (1, 3)] == [600, 3 * 600]
    assert b.deadline("advisor", 3) == 600 and b.deadline("verifier", 3) == 7500  # one head verified, one advisor turn
    with_turn = TimeLimits.of(harness(runtime={"student": OPENHANDS}).times(), target())
    assert with_turn.student.job_deadline(2) == 2 * 600 + 1800 and with_turn.student.train == 540  # each arm's own


def test_the_verifier_deadline_holds_the_test_and_every_seed_it_may_add() -> None:
    b = TimeLimits.of(harness().times(), target(test="pytest -q", budget={"wall_seconds": 100}, holdout={"max_seeds": 5}))
    assert b.verifier.steps == VerifierSteps(train=100, score=100, test=100, seeds=5)
    assert b.verifier.deadline == 100 + 2 * 5 * (100 + 100) + 300


def test_a_verifier_wall_that_holds_the_steps_is_the_deadline_and_one_that_does_not_is_refused() -> None:
    assert TimeLimits.of(harness(verifier_wall_seconds=7500).times(), target()).verifier.deadline == 7500
    with pytest.raises(ConfigError) as e:
        TimeLimits.of(harness(verifier_wall_seconds=1800).times(), target())
    message = str(e.value)
    assert "verifier_wall_seconds (1800 s, harness config)" in message and "senpai.yaml" in message
    assert "2 sides x 3 seeds (holdout.seeds, holdout.max_seeds) x (train 600 s + score 600 s; budget.wall_seconds)" in message
    assert "= 7500 s" in message


@pytest.mark.parametrize(
    "changes, expected",
    [
        (
            {"runtime": {"advisor": {**OPENHANDS, "turn": {"wall_seconds": 1800}}}, "advisor_wall_seconds": 600},
            r"advisor_wall_seconds \(600 s\) cannot hold the advisor's turn: runtime\.advisor\.turn\.wall_seconds \(1800 s\)",
        ),
        ({"tick_seconds": 5, "full_refresh_seconds": 2}, r"full_refresh_seconds \(2 s\) is shorter than tick_seconds \(5 s\)"),
        (
            {"tick_seconds": 5, "steering": {"batch_seconds": 10}, "stale_after_seconds": 45},
            r"stale_after_seconds \(45 s\) must exceed .* tick_seconds \(5\) \+ steering\.batch_seconds \(10\) "
            r"\+ the last relaunch backoff \(30\) = 45 s",
        ),
        (  # 3 attempts x 100 s + waits 8 + 16 s > 300 s
            {"runtime": {"student": {**OPENHANDS, "llm": {"model": "m", "timeout": 100}, "turn": {"wall_seconds": 300}}}},
            r"runtime\.student\.llm\.timeout \(100 s\) x 3 attempts \(llm\.num_retries 2 \+ 1\) \+ 24 s of waits between "
            r"them = 324 s: one LLM call could outlast the turn, runtime\.student\.turn\.wall_seconds \(300 s\)",
        ),
        (  # no timeout fits: the waits alone (8 + 16 + 30 + 30 s) fill the turn
            {"runtime": {"advisor": {**OPENHANDS, "llm": {"model": "m", "num_retries": 4}, "turn": {"wall_seconds": 80}}}},
            r"runtime\.advisor\.turn\.wall_seconds \(80 s\) cannot hold 5 attempts of an LLM call \(llm\.num_retries 4 "
            r"\+ 1\) and the 84 s of waits between them",
        ),
        (
            {"runtime": {"advisor": OPENHANDS, "no_effect": {"turns": 4}}, "fleet": KUBERNETES},
            r"runtime\.no_effect: the waits before the last of 4 no-effect advisor turns \(2100 s\) must end within "
            r"fleet\.ttl_seconds_after_finished \(1800 s\)",
        ),
    ],
    ids=["advisor-turn", "refresh-tick", "stale-relaunch", "llm-call", "llm-retries", "no-effect-ttl"],
)
def test_an_inner_limit_that_does_not_fit_is_refused_at_load(tmp_path: Path, changes: dict, expected: str) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump({**HARNESS, **changes}))
    with pytest.raises(ConfigError, match=rf"^{path}: (?!<root>).*{expected}"):
        load_harness(path)


def test_the_same_settings_load_once_the_inner_limit_fits(tmp_path: Path) -> None:
    fits = {"runtime": {"advisor": {**OPENHANDS, "turn": {"wall_seconds": 1800}}}, "advisor_wall_seconds": 2100}
    assert harness(**fits).advisor_wall_seconds == 2100
    assert harness(tick_seconds=5, full_refresh_seconds=5).full_refresh_seconds == 5
    assert harness(tick_seconds=5, steering={"batch_seconds": 10}, stale_after_seconds=46).stale_after_seconds == 46
    three = {"advisor": OPENHANDS, "no_effect": {"turns": 3}}  # 300 + 600 s of waits
    assert harness(runtime=three, fleet=KUBERNETES).runtime.no_effect.turns == 3


def test_an_llm_call_timeout_is_derived_to_fit_its_turn_and_a_set_one_that_fits_is_kept() -> None:
    def call(llm: dict, wall: int) -> LLMCall:
        rt = harness(runtime={"advisor": {**OPENHANDS, "llm": {"model": "m", **llm}, "turn": {"wall_seconds": wall}}})
        settings = rt.runtime.advisor.llm
        return LLMCall.of(settings.timeout, settings.num_retries, wall)

    assert call({}, 1800) == LLMCall(timeout=300, attempts=3)  # the SDK's 300 s, as before these settings
    assert call({}, 300) == LLMCall(timeout=92, attempts=3)  # (300 - 8 - 16) // 3: the call fits the turn
    assert call({}, 300).seconds() <= 300 < call({"timeout": 93}, 1800).seconds()
    assert call({"timeout": 92, "num_retries": 0}, 92) == LLMCall(timeout=92, attempts=1)  # exactly the turn: it fits
    assert call({"timeout": 100}, 324).seconds() == 324


def test_an_infinite_turn_dollar_limit_is_refused_at_load_not_when_a_stopped_turn_reports_it(tmp_path: Path) -> None:
    # a turn-limit report (`senpai-budget`) holds the turn's limits as a TurnUsage (finite, for the spend sums): a turn
    # stopped by another limit would fail to post it, after its LLM money was spent
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump({**HARNESS, "runtime": {"advisor": {**OPENHANDS, "turn": {"dollars": float("inf")}}}}))
    with pytest.raises(ConfigError, match=r"runtime\.advisor.*dollars"):
        load_harness(path)
    turn = harness(runtime={"advisor": {**OPENHANDS, "turn": {"dollars": 1e9}}}).runtime.advisor.turn
    assert TurnUsage(**turn.model_dump()).dollars == 1e9  # what TurnGuard.limits() builds


def _llm(**llm) -> dict:
    return {"runtime": {"advisor": {**OPENHANDS, "llm": {"model": "m", **llm}}}}


@pytest.mark.parametrize(
    "changes, expected",
    [
        # it used to hang the load: the waits between 10**9 attempts were summed one by one
        (_llm(num_retries=10**9), r"runtime\.advisor\.llm\.num_retries: must be less than or equal to 10"),
        (_llm(max_output_tokens=10**30), r"runtime\.advisor\.llm\.max_output_tokens: must be less than or equal to 1000000"),
        # extra_body keys land in the request's JSON body over senpai's own: the prompt, the output cap, the cost
        (_llm(extra_body={"messages": [{"role": "user", "content": "x"}]}), r"extra_body: 'messages' is senpai's"),
        (_llm(extra_body={"max_completion_tokens": 99999}), r"'max_completion_tokens' is senpai's.*max_output_tokens"),
        (_llm(extra_body={"n": 5}), r"extra_body: 'n' is senpai's"),
        (_llm(extra_body={"model": "gpt-4o"}), r"extra_body: 'model' is senpai's.*llm\.model"),
        (_llm(extra_body={"api_key": "sk-x"}), r"extra_body: 'api_key' is senpai's.*api_key_env"),
        (_llm(extra_body={"tools": []}), r"extra_body: 'tools' is senpai's"),
        (_llm(extra_body={"blob": "y" * 20_000}), r"extra_body: \d+ bytes as JSON \(at most 8192\)"),
        (_llm(extra_body={"temperature": float("nan")}), r"extra_body: .*not JSON"),
        # a wait of inf seconds crashed the wrapper's tick (timedelta overflow) at the first no-effect turn
        ({"runtime": {"no_effect": {"backoff_seconds": float("inf")}}}, r"runtime\.no_effect\.backoff_seconds: .*finite"),
        ({"runtime": {"no_effect": {"backoff_seconds": 10**7}}}, r"runtime\.no_effect\.backoff_seconds: must be less than"),
        # it used to raise OverflowError (exit 1) summing 10**9 doubling waits
        ({"runtime": {"no_effect": {"turns": 10**9}}}, r"runtime\.no_effect\.turns: must be less than or equal to 20"),
        # YAML's `true` used to load as a 1 s timeout (and 1 retry, a 1-token cap)
        (_llm(timeout=True), r"runtime\.advisor\.llm\.timeout: .*valid integer"),
        (_llm(num_retries=True), r"runtime\.advisor\.llm\.num_retries: .*valid integer"),
        (_llm(max_output_tokens=True), r"runtime\.advisor\.llm\.max_output_tokens: .*valid integer"),
    ],
    ids=[
        "retries-huge", "max-output-huge", "body-messages", "body-cap", "body-n", "body-model", "body-key", "body-tools",
        "body-huge", "body-nan", "backoff-inf", "backoff-huge", "turns-huge", "timeout-bool", "retries-bool",
        "max-output-bool",
    ],
)  # fmt: skip
def test_an_llm_or_no_effect_setting_senpai_cannot_honour_is_a_config_error(tmp_path: Path, changes, expected) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump({**HARNESS, **changes}))
    with pytest.raises(ConfigError, match=rf"^{path}: .*{expected}"):
        load_harness(path)


def test_extra_body_fields_senpai_does_not_set_are_kept() -> None:
    body = {"tool_choice": "required", "parallel_tool_calls": False, "cache_prompt": True, "chat_template_kwargs": {"a": [1]}}
    assert harness(**_llm(extra_body=body, num_retries=10)).runtime.advisor.llm.extra_body == body
    slowest = {"backoff_seconds": 86_400, "turns": 20}  # the longest wait stays a timedelta
    assert harness(runtime={"no_effect": slowest}).runtime.no_effect.wait(19) == 86_400 * 2**18


def test_the_old_runtime_role_budget_key_still_loads_as_turn_with_a_warning_and_both_are_refused(tmp_path: Path, caplog):
    path = tmp_path / "harness.yaml"
    old = {"advisor": {**OPENHANDS, "budget": {"llm_calls": 7}}, "student": {"kind": "search", "budget": {"tokens": 9}}}
    path.write_text(yaml.safe_dump({**HARNESS, "runtime": old}))
    with caplog.at_level(logging.WARNING, logger="senpai.config.harness"):
        cfg = load_harness(path)
    assert cfg.runtime.advisor.turn.llm_calls == 7 and cfg.runtime.student.turn.tokens == 9
    assert [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()] == [
        f"{path}: runtime.{role}.budget is deprecated, read as runtime.{role}.turn: rename it" for role in ("advisor", "student")
    ]
    both = {"advisor": {**OPENHANDS, "budget": {"llm_calls": 7}, "turn": {"llm_calls": 8}}}
    path.write_text(yaml.safe_dump({**HARNESS, "runtime": both}))
    with pytest.raises(ConfigError, match=r"runtime\.advisor\.budget and runtime\.advisor\.turn are both set"):
        load_harness(path)
    path.write_text(yaml.safe_dump({**HARNESS, "runtime": {"advisor": {**OPENHANDS, "budget": {"llm_cals": 7}}}}))
    with pytest.raises(ConfigError, match=r"runtime\.advisor\.budget\.llm_cals: is not a field senpai knows"):
        load_harness(path)  # named as the file writes it, not as runtime.advisor.turn.llm_cals
