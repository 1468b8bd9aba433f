"""Opening a hypothesis PR: the one way every runtime (and `/senpai try`) starts an experiment."""

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from senpai import phases
from senpai.config.harness import HarnessConfig
from senpai.config.target import Metric
from senpai.errors import PermanentError
from senpai.forge.base import PullRequest
from senpai.job.context import TurnContext
from senpai.ledger import transitions
from senpai.ledger.baseline import Baseline
from senpai.ledger.blocks import Arm, BaselineRef, BudgetRef, Hypothesis, MetricRef
from senpai.ledger.redact import register_secret

ENV_SALT = "SENPAI_ID_SALT"
SALT_FILE = "id-salt"


def id_salt(harness: HarnessConfig) -> bytes:
    """The install's secret salt for hypothesis ids: `$SENPAI_ID_SALT` if set, else the content of
    `<state_dir>/id-salt`, created once (mode 0600, 32 random bytes as hex) by whichever process
    asks first.  Every process of one install (wrapper, local jobs, Kubernetes jobs through the
    shared volume) reads the same salt, so ids stay deterministic; nobody without it predicts them.
    """
    value = os.environ.get(ENV_SALT)
    if not value:
        path = Path(harness.state_dir) / SALT_FILE
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{SALT_FILE}.{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
            try:
                os.link(tmp, path)  # atomic and never overwrites: a concurrent creator's salt wins
            except FileExistsError:
                pass
            finally:
                tmp.unlink()
        value = path.read_text().strip()
    register_secret(value)
    return value.encode()


def hypothesis_id(params: dict, change: str | None, salt: bytes) -> str:
    """Id `h-<10 hex>` of a params point (plus a code-change text, if any): HMAC-SHA256 under the
    install's `salt` (`id_salt`), so it is stable per install and not predictable from the ledger."""
    key = json.dumps(params, sort_keys=True) + (f"\n{change}" if change else "")
    return "h-" + hmac.new(salt, key.encode(), hashlib.sha256).hexdigest()[:10]


def reported(metric: Metric) -> str:
    """What a plan reports and where it comes from, by the target's `metric.source`."""
    where = "the W&B run's summary" if metric.source == "wandb" else "the last value the program prints of it on stdout"
    return f"{metric.name} from {where}"


def open_hypothesis(
    ctx: TurnContext,
    student: str,
    *,
    hypothesis: str,
    rationale: str,
    plan: str,
    params: dict,
    baseline: Baseline,
    change: str | None = None,
    request: str | None = None,
    exploration: str | None = None,
    arms: list[Arm] | None = None,
    measures_base: bool = False,
    remeasures: int | None = None,
) -> PullRequest:
    """Push branch `senpai/<student>/<hid>` at the baseline commit and open its PR in state wip.

    `params` is the full params point the student writes into the target's params file; `change`
    describes a code change in words (LLM runtimes); `request` is the ref of the `/senpai try` that
    asked for it (its id then differs from a proposal of the same point, so a fresh branch is cut);
    `exploration` is the diversity alarm's reason when it was raised for this turn (recorded in the block);
    `arms` are its named variants (`Hypothesis.arms`; they enter its id); `measures_base` marks the
    measurement of the base itself (`Hypothesis.measures_base`; it enters the id); `remeasures` is the
    failed measurement of the same base that this one repeats (`senpai.ledger.basefails.resolved`;
    it enters the id, so a fresh branch is cut). Raises ValueError for invalid arms.
    Idempotent: an existing branch and open PR are reused. Raises TransitionError if the PR exists
    but cannot be (re)opened.
    """
    t = ctx.target
    text = change if request is None else f"{change or ''}\nrequest:{request}"
    if arms:
        text = f"{text or ''}\narms:{json.dumps([a.model_dump() for a in arms], sort_keys=True)}"
    text = f"{text or ''}\nmeasures_base:{baseline.commit}" if measures_base else text
    text = f"{text}\nremeasures:{remeasures}" if measures_base and remeasures else text
    hid = hypothesis_id(params, text, id_salt(ctx.harness))
    limits = ctx.time_limits.student  # an LLM student's job holds its agent turn as well as the training run
    deadline = limits.job_deadline(len(arms) if arms else 1)  # one full training run per arm
    h = Hypothesis(
        id=hid,
        hypothesis=hypothesis,
        rationale=rationale,
        plan=plan,
        params=params,
        change=change,
        metric=MetricRef(name=t.metric.name, direction=t.metric.direction, target=t.metric.target),
        baseline=BaselineRef(commit=baseline.commit, run_id=baseline.run_id, value=baseline.value),
        budget=BudgetRef(wall_seconds=deadline, attempts=limits.attempts),
        stop_condition=f"{limits.attempts} attempt(s) of at most {deadline} s each",
        student=student,
        request=request,
        exploration=exploration,
        arms=arms,
        measures_base=measures_base,
    )
    branch = f"senpai/{student}/{hid}"
    # git, not REST: a branch check costs no rate limit
    if not ctx.repo.git("ls-remote", "origin", f"refs/heads/{branch}", network=True):
        _fetch_base(ctx, baseline.commit)
        ctx.repo.git("checkout", "--quiet", "-B", branch, baseline.commit)
        ctx.repo.commit_all(f"Start experiment {hid}: {h.hypothesis}", allow_empty=True)
        ctx.repo.push(branch)
    # the turn's own listing finds a PR a crashed turn already opened from `branch` (listing again
    # after each PR this turn opens would cost a request each: the open changed the list)
    pulls = ctx.ledger.listed()
    pr = transitions.open_experiment(ctx.forge, h, branch, ctx.base, f"[{student}] {h.hypothesis}", pulls)
    phases.mark("opened")
    return pr


def _fetch_base(ctx: TurnContext, commit: str) -> None:
    """Make `commit` (read from the forge after the clone) present in the turn's clone: the base may
    have moved since.  Raises TransientError if the fetch fails on the network."""
    try:
        ctx.repo.git("cat-file", "-e", f"{commit}^{{commit}}")
    except PermanentError:
        ctx.repo.git("fetch", "--quiet", "origin", ctx.base, network=True)
