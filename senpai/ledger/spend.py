"""What the research programme has spent, summed from the ledger's own records (so a restart loses
nothing): every student attempt's evidence (`Cost`), every verification's train-step seconds, and
every openhands advisor turn's `TurnCost` (on the PR it was about or opened, else on the
steering issue `transitions.record_turn` keeps for them). The one computation behind the fleet's
caps (`senpai.wrapper.caps`), `senpai status` and `senpai report`.

A seed of either side a verification reused from an earlier verification (`Verification.baseline_reused`,
`candidate_reused`) carries the seconds of the run that measured it: it is counted there, once, not
again here.

An advisor turn may run more than once (resumed after a crash, or after its wall time ran out):
its records share the turn's key, and each holds the conversation's LLM calls, tokens and dollars
so far and its own run's wall seconds, so a key counts its largest record's LLM figures and the sum
of its records' seconds.  A ledger from before `TurnCost` has only the stopped turns' `BudgetReport`:
an advisor's report counts unless a `TurnCost` of the same stopped turn (same PR and revision)
is there, so no turn counts twice.  Old reports of turns about no PR sit on issues no reader
lists: those are not counted.
"""

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, computed_field

from senpai.forge.base import Comment
from senpai.ledger.blocks import TurnCost, TurnUsage, Verification
from senpai.ledger.experiment import Experiment
from senpai.ledger.records import bot_records

HOUR = 3600.0


class Spend(BaseModel):
    """Seconds, tokens and dollars, by role: student (evidence `cost`), verifier (train-step seconds
    of the seeds it trained, reused baseline seeds left out) and advisor (its openhands turns'
    records). `gpu_hours` and `cpu_hours` are job hours (wall seconds x the job's GPUs or CPU
    cores). `tokens` and `dollars` are all roles'; `advisor_tokens` and `advisor_dollars` the
    advisor's share."""

    model_config = ConfigDict(frozen=True)
    experiments: int = Field(0, description="Experiments opened (any state).")
    student_seconds: float = Field(0.0, description="Student wall seconds (evidence `cost.wall_seconds`).")
    verifier_seconds: float = Field(0.0, description="Verifier train-step seconds of both sides' trained seeds.")
    advisor_seconds: float = Field(0.0, description="Wall seconds of the openhands advisor's turns.")
    gpu_seconds: float = Field(0.0, description="Student train seconds x GPUs, plus verifier train-step seconds x GPUs.")
    cpu_seconds: float = Field(0.0, description="Student and verifier seconds x the student's CPU cores.")
    tokens: int = Field(0, description="LLM prompt + completion tokens of student and advisor turns.")
    dollars: float = Field(0.0, description="LLM dollars (LiteLLM's cost), as `tokens`.")
    advisor_tokens: int = Field(0, description="The advisor's share of `tokens`.")
    advisor_dollars: float = Field(0.0, description="The advisor's share of `dollars`.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gpu_hours(self) -> float:
        return self.gpu_seconds / HOUR

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cpu_hours(self) -> float:
        return self.cpu_seconds / HOUR

    @property
    def seconds(self) -> float:
        """Wall seconds of all three roles."""
        return self.student_seconds + self.verifier_seconds + self.advisor_seconds

    def __add__(self, other: "Spend") -> "Spend":
        return total([self, other])

    def per(self, n: int) -> "Spend":
        """This spend divided by `n` (> 0); `experiments` is kept."""
        kept = {"experiments": self.experiments, **{k: round(getattr(self, k) / n) for k in ("tokens", "advisor_tokens")}}
        return Spend(**{k: getattr(self, k) / n for k in Spend.model_fields if k not in kept}, **kept)


def total(parts: list[Spend]) -> Spend:
    """The field-wise sum of `parts`: one model built, not one per part (a tick sums every experiment)."""
    return Spend(**{k: sum(getattr(p, k) for p in parts) for k in Spend.model_fields})


def _trained(v: Verification, side: str, figure: str) -> float:
    """The sum of a side's figure per seed (`figure` "seconds": `v.baseline_seconds`...) over the
    seeds `v` trained itself."""
    reused = getattr(v, f"{side}_reused")
    return sum(x for seed, x in zip(v.seeds, getattr(v, f"{side}_{figure}"), strict=False) if seed not in reused)


def read_turns(comments: Iterable[Comment], bot: str) -> list[TurnCost]:
    """The `TurnCost` records among `comments` (of an issue) that count (`records.bot_records`)."""
    return [t for _, t in bot_records(comments, bot, TurnCost)]


def advisor_usage(turns: Iterable[TurnCost]) -> TurnUsage:
    """What the advisor turns `turns` spent, each turn once: per key the LLM figures of its largest
    record (the conversation's totals so far) and the sum of its records' wall seconds (each run's own);
    a record posted twice (the same `record_key`) counts once."""
    by_key: dict[str, dict[int, TurnUsage]] = {}
    for t in turns:
        by_key.setdefault(t.key, {})[t.spent.llm_calls] = t.spent
    runs = [list(r.values()) for r in by_key.values()]
    top = [max(r, key=lambda u: (u.llm_calls, u.tokens, u.dollars)) for r in runs]
    return TurnUsage(
        llm_calls=sum(u.llm_calls for u in top),
        tokens=sum(u.tokens for u in top),
        dollars=sum(u.dollars for u in top),
        wall_seconds=sum(u.wall_seconds for r in runs for u in r),
    )


def _uncovered_reports(e: Experiment) -> list[TurnUsage]:
    """What `e`'s advisor turn-limit reports (`senpai-budget`) spent that no `TurnCost` of the same stopped turn holds (a
    ledger from before them); a student's is in its failed evidence's cost."""
    stopped = {(t.pr, t.revision) for t in e.turn_costs if t.status == "budget"}
    return [r.spent for r in e.budget_reports if r.role == "advisor" and (r.pr, r.revision) not in stopped]


def _work(e: Experiment, cores: int) -> Spend:
    """`e`'s student and verifier spend (`experiments` 1); `cores`: the CPU cores of each job of its student."""
    verifier = sum(_trained(v, side, "seconds") for v in e.verifications for side in ("baseline", "candidate"))
    verifier_gpu = sum(_trained(v, side, "gpu_seconds") for v in e.verifications for side in ("baseline", "candidate"))
    student = sum(ev.cost.wall_seconds for ev in e.evidence)
    return Spend(
        experiments=1,
        student_seconds=student,
        verifier_seconds=verifier,
        gpu_seconds=sum(ev.cost.gpu_seconds for ev in e.evidence) + verifier_gpu,
        cpu_seconds=(student + verifier) * cores,
        tokens=int(sum(ev.cost.tokens for ev in e.evidence)),
        dollars=sum(ev.cost.dollars for ev in e.evidence),
    )


def _advisor(u: TurnUsage) -> Spend:
    """The advisor's usage `u` as a Spend: its seconds, and its tokens and dollars both in the totals and as its share."""
    return Spend(
        advisor_seconds=u.wall_seconds, tokens=u.tokens, dollars=u.dollars, advisor_tokens=u.tokens, advisor_dollars=u.dollars
    )


def _plus(*usages: TurnUsage) -> TurnUsage:
    return TurnUsage(**{k: sum(getattr(u, k) for u in usages) for k in TurnUsage.model_fields})


def experiment_spend(e: Experiment, cores: int = 1) -> Spend:
    """What experiment `e` spent (`experiments` 1); `cores`: the CPU cores of each job of its student.
    Its advisor's: the turns recorded on its PR (`advisor_usage`) and its uncovered turn-limit reports."""
    return _work(e, cores) + _advisor(_plus(advisor_usage(e.turn_costs), *_uncovered_reports(e)))


def spend(exps: list[Experiment], cpus: Mapping[str, int], turns: Iterable[TurnCost] = ()) -> Spend:
    """The ledger's totals over `exps` (as `experiment_spend`); `cpus`: student name -> CPU cores of
    each of its jobs (harness `students`; a student no longer configured counts 1); `turns`: the
    advisor's `TurnCost` records on the steering issues (`read_turns`). Each advisor turn counts once
    across PRs and the issue (a resumed turn may record on both)."""
    records = [t for e in exps for t in e.turn_costs] + list(turns)
    reports = [u for e in exps for u in _uncovered_reports(e)]
    advisor = _advisor(_plus(advisor_usage(records), *reports))
    return total([*(_work(e, cpus.get(e.student or "", 1)) for e in exps), advisor])
