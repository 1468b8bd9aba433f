"""Who each W&B run is (`senpai.job.runs`), over the fake forge and a recording tracker (a fake
of the tracker port): the PR link, the experiment's commit, the verify run's numbers, and that a
tracker failure never fails the job."""

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from forge_fixtures import commit_and_push

from senpai.errors import ConfigError, SenpaiError, TransientError
from senpai.job import runs
from senpai.ledger.blocks import Decision, Verification
from senpai.ledger.labels import SENPAI
from senpai.ledger.table import LedgerReader
from senpai.tracker.base import RunRecord

HEAD, BASE = "c" * 40, "b" * 40


@dataclass
class Recorder:
    """The tracker port's writing half: what was logged and tagged; `fail` makes each call raise it."""

    installation: str = "0badc0de"
    fail: SenpaiError | None = None
    logged: list = field(default_factory=list)
    tagged: list = field(default_factory=list)

    def log_run(self, run, summary, table=None) -> RunRecord:
        if self.fail:
            raise self.fail
        self.logged.append((run, summary, table))
        return RunRecord(
            id=run.id, name=run.name, group=run.group, tags=run.tags, config={}, summary=summary, state="finished", url=None
        )

    def add_tags(self, group, tags) -> int:
        if self.fail:
            raise self.fail
        self.tagged.append((group, tags))
        return 0


@pytest.fixture
def setup(fake_forge, tmp_path):
    forge, _ = fake_forge
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h1", {"x.txt": "x\n"}, start="advisor")
    pr = forge.create_pull("h1", "body", "senpai/ada/h1", "advisor", [SENPAI])
    tracker = Recorder()
    ctx = SimpleNamespace(
        harness=SimpleNamespace(forge=SimpleNamespace(repo="lab/digits")),
        forge=SimpleNamespace(clone_url="https://bot:tok3n@forge.example/git/lab/digits.git"),
        ledger=LedgerReader(forge),
        tracker=tracker,
    )
    return ctx, pr, tracker


def verification(pr: int, seeds: list[int]) -> Verification:
    n = len(seeds)
    return Verification(
        pr=pr, candidate=HEAD, baseline=BASE, metric="acc", direction="maximize", seeds=seeds,
        candidate_values=[0.9] * n, baseline_values=[0.7] * n, candidate_mean=0.9 if n else None,
        baseline_mean=0.7 if n else None, improvement=0.2 if n else None, noise_floor=0.01 if n else None,
        passed=bool(n), reason="r",
    )  # fmt: skip


def test_a_train_run_is_the_experiments(setup):
    ctx, pr, _ = setup
    run = runs.run_identity(ctx, pr.number, 2, "ada", HEAD, "h-1", {"lr": 0.1})
    assert run.id == f"digits-pr{pr.number}-a2-0badc0de" and run.group == f"pr-{pr.number}" and run.job_type == "train"
    assert run.tags == ["senpai", "student:ada", f"pr-{pr.number}"] and run.name == f"ada/pr-{pr.number}/2"
    assert (run.notes, run.git_commit) == (pr.html_url, HEAD)
    assert run.git_remote == "https://forge.example/git/lab/digits.git"  # the bot's credential never reaches W&B
    assert run.config == {"senpai_pr": pr.number, "senpai_head": HEAD, "senpai_hypothesis": "h-1", "lr": 0.1}


def test_the_pr_link_is_read_once_and_a_missing_pr_leaves_it_empty(setup, caplog):
    ctx, pr, _ = setup
    assert runs.pr_url(ctx, pr.number) == pr.html_url  # read: the ledger had not listed it yet
    calls = []
    ctx.ledger.forge = SimpleNamespace(pulls_updated=lambda *a: calls.append(a), get_pull=lambda n: calls.append(n))
    assert runs.pr_url(ctx, pr.number) == pr.html_url and calls == []  # then from what the ledger holds
    ctx.ledger = LedgerReader(SimpleNamespace(pulls_updated=_down, get_pull=_down))
    assert runs.pr_url(ctx, 99) is None and "no link to PR #99" in caplog.text
    assert runs.pr_url(ctx, None) is None


def _down(*args):
    raise TransientError("forge is down")


def test_the_verifier_logs_its_numbers_and_a_refusal_logs_nothing(setup):
    ctx, pr, tracker = setup
    ref = runs.log_verification(ctx, verification(pr.number, [0, 1]))
    ((run, summary, table),) = tracker.logged
    assert ref.id == run.id and ref.state == "finished" and run.job_type == "verify" and run.git_commit == HEAD
    assert run.id == runs.log_verification(ctx, verification(pr.number, [0, 1, 2])).id  # one run per measured pair
    assert summary == {
        "candidate_mean": 0.9,
        "baseline_mean": 0.7,
        "improvement": 0.2,
        "noise_floor": 0.01,
        "passed": 1.0,
        "seeds": 2.0,
    }
    assert table.rows == [["candidate", 0, 0.9], ["candidate", 1, 0.9], ["baseline", 0, 0.7], ["baseline", 1, 0.7]]
    assert runs.log_verification(ctx, verification(pr.number, [])) is None and len(tracker.logged) == 2


@pytest.mark.parametrize(
    "error",
    [TransientError("W&B is down"), ConfigError("W&B is down: a tracker folder a PR's code broke")],
    ids=["transient", "config"],
)
def test_a_tracker_failure_never_fails_the_job(setup, caplog, error):
    ctx, pr, tracker = setup
    tracker.fail = error  # any senpai error: the advisor's turn after a merge goes on
    assert runs.log_verification(ctx, verification(pr.number, [0])) is None
    runs.tag_verdict(ctx, Decision(pr=pr.number, head=HEAD, verdict="merge", reason="r"))
    assert "not logged: W&B is down" in caplog.text and f"PR #{pr.number} not tagged verdict:merge" in caplog.text
    tracker.fail = None
    runs.tag_verdict(ctx, Decision(pr=pr.number, head=HEAD, verdict="close", reason="r"))
    assert tracker.tagged == [(f"pr-{pr.number}", ["verdict:close"])]
