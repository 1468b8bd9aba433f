"""Time limits: every job deadline, inner timeout, retry and attempt count senpai enforces, in one table.

`TimeLimits.of(times, target)` computes each role's job deadline and the inner timeouts inside it
from what the harness config sets of them (`HarnessTimes`, `HarnessConfig.times()`) and the target's
senpai.yaml; the constants below are the limits no
config sets. The wrapper gives each job its role's `deadline` (the fleet kills the job then:
the local supervisor, or Kubernetes' activeDeadlineSeconds); the jobs time their steps from the
same table. All durations are seconds.

A job's deadline is derived from what runs inside it, so it fits by construction; a deadline an
operator sets instead (`advisor_wall_seconds`, `verifier_wall_seconds`) must still hold it, and is
refused otherwise (`HarnessConfig`, `senpai.config.harness.time_problems`, for the advisor; `TimeLimits.of`
for the verifier, whose steps the target declares). This module reads the harness config only as
plain values (`HarnessTimes`, `LLMCall.of`'s arguments): the harness imports it, not the reverse.
Inner and outer, as checked:

    advisor job   ⊇ openhands turn (runtime.advisor.turn.wall_seconds) + JOB_OVERHEAD_SECONDS
    openhands turn ⊇ one LLM call: (llm.num_retries + 1) attempts x llm.timeout + the waits between them
    student job   = arms x target budget.wall_seconds + openhands turn (runtime.student.turn.wall_seconds)
                    ⊇ per arm: train command (TRAIN_SHARE of the compute budget, cut to end POST_SHARE before the deadline)
    verifier job  ⊇ test + 2 sides x seeds x (train step + score step), each step budget.wall_seconds,
                    + JOB_OVERHEAD_SECONDS
    stale_after_seconds ⊇ tick_seconds + steering.batch_seconds + the longest relaunch backoff
    fleet.ttl_seconds_after_finished (Kubernetes) ⊇ the waits between runtime.no_effect.turns advisor turns
    full_refresh_seconds ⊇ tick_seconds
"""

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from senpai.config.roles import Role
from senpai.errors import ConfigError

if TYPE_CHECKING:  # pydantic models a process that needs only these limits does not load
    from senpai.config.target import TargetConfig

JOB_OVERHEAD_SECONDS = 300  # an advisor or verifier job's work around its turn or steps: clone, forge reads, its record
SEARCH_ADVISOR_SECONDS = 600  # a search advisor job's deadline when `advisor_wall_seconds` is unset
TRAIN_SHARE = 0.9  # of the target's compute budget (budget.wall_seconds): the student's train command
POST_SHARE = 0.1  # of the target's compute budget: kept after the train command to read the run and post evidence


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Retries(_Row):
    """How one network operation is retried (tenacity): `attempts` tries, waits from `backoff_seconds`
    doubling, capped at `max_wait_seconds` (a longer Retry-After is raised as TransientError)."""

    attempts: int = Field(ge=1, description="Tries per operation, the first included.")
    backoff_seconds: float = Field(ge=0, description="First wait, seconds; doubled each retry.")
    max_wait_seconds: float = Field(ge=0, description="Longest single wait slept, seconds.")


class GitRetries(Retries):
    """Retries of a git network command (clone, fetch, push), bounded in all by `total_seconds`."""

    total_seconds: float = Field(gt=0, description="Bound on one git network command, retries included, seconds.")


class ForgeRetries(Retries):
    """Retries of a forge REST request, each request bounded by `timeout_seconds`."""

    timeout_seconds: int = Field(gt=0, description="Per REST request, whole seconds (PyGithub takes an int).")


class Relaunch(_Row):
    """How the wrapper relaunches work that failed on infrastructure (`senpai.wrapper.policy.infra_failure`)
    or an advisor turn that died: the k-th relaunch waits `wait(k)` after the failed run finished."""

    runs: int = Field(3, ge=1, description="Runs of one student or verifier job, relaunches included, before escalation.")
    advisor_runs: int = Field(3, ge=1, description="Advisor turns of one event batch, dead ones included, before escalation.")
    backoff_seconds: float = Field(15.0, ge=0, description="Wait before the first relaunch, seconds; doubled per relaunch.")

    def wait(self, k: int) -> float:
        """Seconds the k-th relaunch (k >= 1) waits after the failed run finished."""
        return self.backoff_seconds * 2 ** (k - 1)

    def longest_wait(self) -> float:
        """Seconds the last relaunch a job may get waits."""
        return self.wait(max(self.runs, self.advisor_runs) - 1)


RELAUNCH = Relaunch()
HEAD_MOVES = 3  # re-runs of a PR whose head someone other than senpai moved under its jobs; then it is blocked
GIT = GitRetries(attempts=5, backoff_seconds=1.0, max_wait_seconds=30.0, total_seconds=120.0)  # a job's fetch, push, clone
FORGE = ForgeRetries(attempts=4, backoff_seconds=0.5, max_wait_seconds=30.0, timeout_seconds=30)  # one REST operation
LLM_TIMEOUT_SECONDS = 300  # an LLM call attempt's timeout where llm.timeout is unset and the turn holds it (the SDK's default)
LLM_BACKOFF_SECONDS = 8  # wait after an LLM call's first failed attempt, doubled after each next one (the SDK's backoff)
LLM_MAX_WAIT_SECONDS = 30  # longest wait between two attempts of an LLM call
MIRROR_UPDATE_SECONDS = 60.0  # one git step of the wrapper's base mirror update (no retry); a tick waits for it
MIRROR_COPY_SECONDS = 60.0  # each step of a job's copy of the base mirror (killed with its process group after it)


class LLMCall(_Row):
    """One LLM call of an openhands turn, retries included (`senpai.agents.openhands.llm.make_llm`
    hands it to the OpenHands SDK, which retries timeouts, connection errors, 429s and 5xx).
    The turn's wall-time stop takes effect only between calls, so the whole call must fit the turn."""

    timeout: int = Field(gt=0, description="Seconds one attempt may take.")
    attempts: int = Field(ge=1, description="Tries: llm.num_retries + 1.")

    @classmethod
    def of(cls, timeout: int | None, num_retries: int, wall_seconds: int) -> "LLMCall":
        """`timeout` (a role's llm.timeout) if set, else LLM_TIMEOUT_SECONDS cut so the call, tried
        `num_retries` + 1 times (llm.num_retries), fits `wall_seconds` (the turn's wall-time limit).
        Raises ConfigError if not even a 1-second attempt fits (the waits fill the turn)."""
        attempts = num_retries + 1
        if timeout is not None:
            return cls(timeout=timeout, attempts=attempts)
        fits = int((wall_seconds - waits(num_retries)) // attempts)
        if fits < 1:
            raise ConfigError(
                f"turn.wall_seconds ({wall_seconds} s) cannot hold {attempts} attempts of an LLM call (llm.num_retries "
                f"{num_retries} + 1) and the {waits(num_retries):g} s of waits between them: raise it, or lower "
                "llm.num_retries"
            )
        return cls(timeout=min(LLM_TIMEOUT_SECONDS, fits), attempts=attempts)

    def seconds(self) -> float:
        """The longest the call takes: every attempt timing out, and the waits between them."""
        return self.attempts * self.timeout + waits(self.attempts - 1)


def waits(retries: int) -> float:
    """Seconds an LLM call waits in all between its attempts when it is retried `retries` times:
    LLM_BACKOFF_SECONDS, doubled after each retry, each wait at most LLM_MAX_WAIT_SECONDS."""
    return sum(min(LLM_MAX_WAIT_SECONDS, LLM_BACKOFF_SECONDS * 2**k) for k in range(retries))


class HarnessTimes(_Row):
    """What the time limits read of the harness config (`HarnessConfig.times()`), as plain values."""

    advisor_turn: int | None = Field(description="runtime.advisor.turn.wall_seconds of an openhands advisor; None: search.")
    student_turn: int | None = Field(description="runtime.student.turn.wall_seconds of an openhands student; None: search.")
    advisor_wall_seconds: int | None = Field(None, gt=0, description="advisor_wall_seconds; None: derived.")
    verifier_wall_seconds: int | None = Field(None, gt=0, description="verifier_wall_seconds; None: derived.")


class AdvisorLimits(_Row):
    """One advisor job."""

    deadline: int = Field(gt=0, description="Job deadline, seconds.")
    turn: int | None = Field(description="The openhands turn's wall_seconds; None for the search runtime.")

    @classmethod
    def of(cls, times: HarnessTimes) -> "AdvisorLimits":
        """`advisor_wall_seconds` if set; else SEARCH_ADVISOR_SECONDS (search), or the turn's wall
        time plus JOB_OVERHEAD_SECONDS (openhands), so the turn guard's own stop, with its report,
        comes before the fleet's kill."""
        turn = times.advisor_turn
        derived = SEARCH_ADVISOR_SECONDS if turn is None else turn + JOB_OVERHEAD_SECONDS
        return cls(deadline=times.advisor_wall_seconds or derived, turn=turn)


class StudentLimits(_Row):
    """One student job: an optional agent turn, then the train command (once per arm of a multi-arm
    hypothesis), then its evidence."""

    deadline: int = Field(gt=0, description="Job deadline of a single-arm experiment, seconds: `job_deadline(1)`.")
    run: int = Field(gt=0, description="One training run's share of the deadline, seconds: the target's budget.wall_seconds.")
    train: float = Field(gt=0, description="The train command's timeout, seconds, before `train_timeout` cuts it.")
    post: float = Field(ge=0, description="Seconds kept between the train command's end and the deadline.")
    turn: int | None = Field(description="The openhands turn's wall_seconds; None for the search runtime.")
    attempts: int = Field(ge=1, description="Attempts an experiment gets (recorded in its hypothesis).")

    @classmethod
    def of(cls, times: HarnessTimes, target: "TargetConfig") -> "StudentLimits":
        """The student row for the student turn of `times` and the compute budget of `target`."""
        wall, turn = target.budget.wall_seconds, times.student_turn
        return cls(
            deadline=wall + (turn or 0),
            run=wall,
            train=TRAIN_SHARE * wall,
            post=POST_SHARE * wall,
            turn=turn,
            attempts=target.budget.attempts,
        )

    def job_deadline(self, arms: int = 1) -> int:
        """Deadline of a student job whose hypothesis has `arms` arms (`Hypothesis.arm_count`), seconds:
        a full `run` per arm, each arm trained one after the other, plus the openhands turn."""
        return arms * self.run + (self.turn or 0)


class VerifierSteps(_Row):
    """The verifier's steps, from senpai.yaml alone (a Kubernetes train container has no harness config)."""

    train: float = Field(gt=0, description="One train step (checkout reset and train command), seconds: budget.wall_seconds.")
    score: float = Field(gt=0, description="One score step, seconds: budget.wall_seconds.")
    test: float | None = Field(description="The candidate's test command, seconds; None without `test`.")
    seeds: int = Field(ge=1, description="Seeds per side at most: holdout.max_seeds, else the seeds.")

    @classmethod
    def of(cls, target: "TargetConfig") -> "VerifierSteps":
        """The verifier's steps for `target` (its compute budget, test and holdout seeds)."""
        wall = float(target.budget.wall_seconds)
        return cls(train=wall, score=wall, test=wall if target.test else None, seeds=len(target.holdout.all_seeds()))

    def total(self) -> float:
        """Seconds every step takes at most: the test, then both sides' train and score steps per seed."""
        return (self.test or 0) + 2 * self.seeds * (self.train + self.score)


class VerifierLimits(_Row):
    """One verifier job."""

    deadline: int = Field(gt=0, description="Job deadline, seconds.")
    steps: VerifierSteps

    @classmethod
    def of(cls, times: HarnessTimes, target: "TargetConfig") -> "VerifierLimits":
        """`verifier_wall_seconds` if set, else every step plus JOB_OVERHEAD_SECONDS. Raises
        ConfigError if the set one cannot hold the steps."""
        steps = VerifierSteps.of(target)
        needed = int(steps.total()) + JOB_OVERHEAD_SECONDS
        wall = times.verifier_wall_seconds
        if wall is not None and wall < needed:
            test = f"test {steps.test:g} s + " if steps.test else ""
            raise ConfigError(
                f"verifier_wall_seconds ({wall} s, harness config) cannot hold the verifier's steps under senpai.yaml: "
                f"{test}2 sides x {steps.seeds} seeds (holdout.seeds, holdout.max_seeds) x (train {steps.train:g} s + "
                f"score {steps.score:g} s; budget.wall_seconds) + {JOB_OVERHEAD_SECONDS} s = {needed} s; "
                "raise it, or leave it unset to derive it"
            )
        return cls(deadline=wall or needed, steps=steps)


class TimeLimits(_Row):
    """The time limits: every role's deadline and inner limits, and the retry policies."""

    advisor: AdvisorLimits
    student: StudentLimits
    verifier: VerifierLimits
    relaunch: Relaunch = RELAUNCH
    git: GitRetries = GIT
    forge: ForgeRetries = FORGE

    @classmethod
    def of(cls, times: HarnessTimes, target: "TargetConfig") -> "TimeLimits":
        """The table for the harness config's `times` (`HarnessConfig.times()`) and `target`. Raises
        ConfigError naming the settings if an inner limit does not fit its outer one (the harness
        alone was checked when it loaded)."""
        return cls(
            advisor=AdvisorLimits.of(times),
            student=StudentLimits.of(times, target),
            verifier=VerifierLimits.of(times, target),
        )

    def deadline(self, role: Role, arms: int = 1) -> int:
        """Job deadline of `role` (advisor, student or verifier), seconds; a student job's for a
        hypothesis of `arms` arms (`StudentLimits.job_deadline`)."""
        if role == Role.STUDENT:
            return self.student.job_deadline(arms)
        return {Role.ADVISOR: self.advisor, Role.VERIFIER: self.verifier}[role].deadline
