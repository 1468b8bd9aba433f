"""`senpai demo` prints each experiment's outcome as it happens, once per state, not tick counters."""

import re

import pytest
from forge_fixtures import experiment

from senpai.cli.demo import next_steps
from senpai.cli.progress import OutcomePrinter
from senpai.ledger.blocks import Decision
from senpai.ledger.experiment import Experiment
from senpai.wrapper.loop import TickReport


def exp(pr: int, state: str, decision: Decision | None = None) -> Experiment:
    return experiment(pr, state, decisions=[decision] if decision else [])


def merge(pr: int) -> Decision:
    return Decision(
        pr=pr,
        head="abc",
        verdict="merge",
        reason="beats the floor",
        candidate=0.95,
        baseline=0.803,
        improvement=0.147,
        noise_floor=0.026,
    )


def close(pr: int, reason: str) -> Decision:
    return Decision(pr=pr, head="abc", verdict="close", reason=reason)


def ticks(printer: OutcomePrinter, *states: list[Experiment]) -> None:
    for i, exps in enumerate(states, 1):
        printer(TickReport(i, 0, True, exps=exps))


def test_outcomes_print_once_each_as_they_happen(capsys: pytest.CaptureFixture[str]) -> None:
    printer = OutcomePrinter(target=2)
    ticks(
        printer,
        [exp(3, "verifying"), exp(4, "verifying")],
        [exp(3, "verifying"), exp(4, "verifying")],  # nothing new: nothing printed
        [exp(3, "merged", merge(3)), exp(4, "closed", close(4, "holdout +0.004, under the noise floor 0.026\x1b[2J"))],
    )
    lines = [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        "#3 verifying on the sealed holdout",
        "#4 verifying on the sealed holdout",
        "#3 merged: holdout 0.950 vs 0.803, +0.147 > floor 0.026  [2 of 2 decided]",
        "#4 closed: holdout +0.004, under the noise floor 0.026 [2J  [2 of 2 decided]",  # no terminal escape
    ]


def test_a_merge_seen_before_its_decision_is_posted_waits_for_its_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    """The forge merges first and the decision comment follows; a tick between them sees the PR
    merged under its earlier `changes` decision, which holds no holdout numbers."""
    asked = Decision(pr=3, head="old", verdict="changes", reason="re-apply on the new base")
    merged = experiment(3, "merged", decisions=[asked])
    ticks(OutcomePrinter(target=1), [merged], [merged.model_copy(update={"decisions": [asked, merge(3)]})])
    lines = [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in capsys.readouterr().out.splitlines()]
    assert lines == ["#3 merged: holdout 0.950 vs 0.803, +0.147 > floor 0.026  [1 of 1 decided]"]


def test_a_long_reason_is_cut_to_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    ticks(OutcomePrinter(target=1), [exp(5, "closed", close(5, "why\n" * 100))])
    [line] = capsys.readouterr().out.splitlines()
    assert line.endswith("…  [1 of 1 decided]") and len(line) < 200


def test_the_closing_hints_name_this_demos_files(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    steps = next_steps(tmp_path / "demo-out" / "run1", 6)
    *reads, sync = steps
    assert [s.split()[1] for s in reads] == ["ledger", "status", "report", "logs"]
    assert all("--config demo-out/run1/harness.yaml" in s for s in reads)
    assert sync.split()[2:7] == ["sync", "--config", "demo-out/run1/harness.yaml", "--local-forge", "demo-out/run1/forge"]
    assert "--local-forge demo-out/run1/forge" in steps[0]
