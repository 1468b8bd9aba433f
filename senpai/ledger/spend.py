"""What the research programme has spent, summed from the ledger's own records (so a restart loses
nothing): every student attempt's evidence (`Cost`), every verification's train-step seconds, and
every advisor turn that ran out of its budget (`BudgetReport`). The one computation behind the
fleet's caps (`senpai.wrapper.limits`), `senpai status` and `senpai report`.

A baseline seed a verification reused from another PR's verification (`Verification.baseline_reused`)
carries the seconds of the run that measured it: it is counted there, once, not again here.

An advisor turn that finished within its budget leaves no cost record on the forge (its W&B agent
run holds it): its tokens and dollars are not counted here.
"""

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, computed_field

from senpai.ledger.blocks import Verification
from senpai.ledger.experiment import Experiment

HOUR = 3600.0


class Spend(BaseModel):
    """Seconds, tokens and dollars, by role: student (evidence `cost`), verifier (train-step seconds
    of the seeds it trained, reused baseline seeds left out) and advisor (only the turns that ran out
    of budget post what they spent). `gpu_hours` and `cpu_hours` are job hours (wall seconds x the
    job's GPUs or CPU cores)."""

    model_config = ConfigDict(frozen=True)
    experiments: int = Field(0, description="Experiments opened (any state).")
    student_seconds: float = Field(0.0, description="Student wall seconds (evidence `cost.wall_seconds`).")
    verifier_seconds: float = Field(0.0, description="Verifier train-step seconds of both sides' trained seeds.")
    advisor_seconds: float = Field(0.0, description="Wall seconds of advisor turns stopped by their budget.")
    gpu_seconds: float = Field(0.0, description="Student train seconds x GPUs, plus verifier train-step seconds x GPUs.")
    cpu_seconds: float = Field(0.0, description="Student and verifier seconds x the student's CPU cores.")
    tokens: int = Field(0, description="LLM prompt + completion tokens of student and stopped advisor turns.")
    dollars: float = Field(0.0, description="LLM dollars (LiteLLM's cost), as `tokens`.")

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
        return Spend(**{k: getattr(self, k) + getattr(other, k) for k in Spend.model_fields})

    def per(self, n: int) -> "Spend":
        """This spend divided by `n` (> 0); `experiments` is kept."""
        kept = {"experiments": self.experiments, "tokens": round(self.tokens / n)}
        return Spend(**{k: getattr(self, k) / n for k in Spend.model_fields if k not in kept}, **kept)


def _trained(v: Verification, per_seed: list[float]) -> float:
    """The sum of a baseline figure per seed (`v.baseline_seconds`...) over the seeds `v` trained itself."""
    return sum(x for seed, x in zip(v.seeds, per_seed, strict=False) if seed not in v.baseline_reused)


def experiment_spend(e: Experiment, cores: int = 1) -> Spend:
    """What experiment `e` spent (`experiments` 1); `cores`: the CPU cores of each job of its student."""
    verifier = sum(sum(v.candidate_seconds) + _trained(v, v.baseline_seconds) for v in e.verifications)
    verifier_gpu = sum(sum(v.candidate_gpu_seconds) + _trained(v, v.baseline_gpu_seconds) for v in e.verifications)
    student = sum(ev.cost.wall_seconds for ev in e.evidence)
    advisor = [r.spent for r in e.budget_reports if r.role == "advisor"]  # a student's is in its failed evidence's cost
    return Spend(
        experiments=1,
        student_seconds=student,
        verifier_seconds=verifier,
        advisor_seconds=sum(u.wall_seconds for u in advisor),
        gpu_seconds=sum(ev.cost.gpu_seconds for ev in e.evidence) + verifier_gpu,
        cpu_seconds=(student + verifier) * cores,
        tokens=int(sum(ev.cost.tokens for ev in e.evidence) + sum(u.tokens for u in advisor)),
        dollars=sum(ev.cost.dollars for ev in e.evidence) + sum(u.dollars for u in advisor),
    )


def spend(exps: list[Experiment], cpus: Mapping[str, int]) -> Spend:
    """The ledger's totals: `experiment_spend` summed over `exps`; `cpus`: student name -> CPU cores of
    each of its jobs (harness `students`; a student no longer configured counts 1)."""
    return sum((experiment_spend(e, cpus.get(e.student or "", 1)) for e in exps), Spend())
