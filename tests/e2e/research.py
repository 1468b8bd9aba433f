"""Helpers for end-to-end tests: a research program on the local forge, and ledger invariants."""

import os
import shutil
import time
from collections import Counter
from pathlib import Path

import yaml
from forge_fixtures import TOKEN

from senpai.cli.demo import EXAMPLE, run_until, seed_target, write_config
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config import safe_yaml
from senpai.config.harness import load_harness
from senpai.ledger.blocks import BaselineRef, BudgetRef, Hypothesis, MetricRef
from senpai.ledger.table import LedgerReader

# The targets a test may research: examples/digits (scikit-learn), or tests/quick_target, the same
# contract (params space, metric, holdout and compute) with a stdlib-only train and score step, for
# tests whose subject is the harness (a digits training costs ~4 CPU-s of imports, a quick one ~2).
TARGETS = {"digits": EXAMPLE, "quick": Path(__file__).resolve().parents[1] / "quick_target"}


def make_program(
    base_url: str,
    tmp: Path,
    name: str,
    students: int = 1,
    experiments: int = 1,
    mutate=None,
    files: dict[str, str] | None = None,
    target: str = "digits",
) -> Path:
    """Copy the `target` (TARGETS; optionally changed), push it as repo senpai/<name>, write a harness config.

    Both targets score on the sealed digits holdout that `write_config` writes."""
    example = tmp / "example"
    shutil.copytree(TARGETS[target], example, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    contract = yaml.safe_load((example / "senpai.yaml").read_text())
    contract["holdout"]["seeds"] = [0, 1]  # 2 repeats keep the e2e tests fast; the demo uses 3
    if mutate:
        mutate(contract)
    (example / "senpai.yaml").write_text(safe_yaml.dump(contract))
    for rel, text in (files or {}).items():
        (example / rel).write_text(text)
    config = write_config(tmp / "run", base_url, students, experiments, repo=f"senpai/{name}")
    os.environ.setdefault(load_harness(config).forge.token_env, TOKEN)  # the bot's token, unless a test chose one
    seed_target(load_harness(config).forge, example, tmp / "seed")
    return config


def run(config: Path, decided: int, timeout: float = 240):
    report = run_until(config, decided, time.monotonic() + timeout)
    assert report.decided >= decided, [(e.pr, e.state, e.error) for e in report.exps]
    return report


def reader(config: Path) -> LedgerReader:
    cfg = load_harness(config)
    return LedgerReader(make_forge(cfg), make_tracker(cfg))


def assert_no_duplicates(config: Path) -> None:
    """Each PR: one branch, one evidence per attempt, no comment posted twice, at most one decision per head."""
    led = reader(config)
    pulls = [p for p in led.forge.list_pulls("all")]
    assert len({p.head_ref for p in pulls}) == len(pulls), "two PRs for one hypothesis branch"
    for p in pulls:
        comments = led.forge.list_comments(p.number)
        dupes = [b for b, n in Counter(c.body for c in comments).items() if n > 1]
        assert not dupes, f"PR #{p.number} has a comment posted twice: {dupes[0][:200]}"
        exp = led.experiment(p)
        attempts = [e.attempt for e in exp.evidence]
        assert len(attempts) == len(set(attempts)), f"PR #{p.number}: evidence attempts {attempts}"
        heads = [(d.head, d.verdict) for d in exp.decisions]
        assert len(heads) == len(set(heads)), f"PR #{p.number}: decisions {heads}"


def hand_hypothesis(hid: str, base: str, text: str = "a human-made experiment") -> Hypothesis:
    """A one-attempt hypothesis (digits or quick target) `hid` for student ada, cut from `base` (tests open it by hand)."""
    return Hypothesis(
        id=hid,
        hypothesis=text,
        rationale="test",
        plan="train",
        params={"hidden_width": 32},
        metric=MetricRef(name="val_accuracy", direction="maximize"),
        baseline=BaselineRef(commit=base, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=120, attempts=1),
        stop_condition="1 attempt",
        student="ada",
    )


def ticks(w, n: int) -> list[str]:
    """Run `n` ticks of wrapper `w` (0.3 s apart), asserting none reported an error; their actions."""
    actions = []
    for _ in range(n):
        report = w.tick()
        assert not report.errors, report.errors
        actions += report.actions
        time.sleep(0.3)
    return actions
