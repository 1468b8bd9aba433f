"""What the research programme has spent, summed from the ledger's own records (so a restart loses
nothing): every student attempt's evidence (`Cost`), every verification's train-step seconds, and
every advisor turn that ran out of its budget (`BudgetReport`).

An advisor turn that finished within its budget leaves no cost record on the forge (its W&B agent
run holds it): its tokens and dollars are not counted here.
"""

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from senpai.ledger.experiment import Experiment

HOUR = 3600.0


class Spend(BaseModel):
    """Totals over the ledger; hours are job hours (wall seconds x the job's CPU cores or GPUs)."""

    model_config = ConfigDict(frozen=True)
    experiments: int = Field(0, description="Experiments opened (any state).")
    dollars: float = Field(0.0, description="LLM dollars (LiteLLM's cost) of student and stopped advisor turns.")
    tokens: int = Field(0, description="LLM prompt + completion tokens, as `dollars`.")
    gpu_hours: float = Field(0.0, description="Student train seconds x GPUs, plus verifier train-step seconds x GPUs, / 3600.")
    cpu_hours: float = Field(
        0.0, description="Student wall seconds and verifier train-step seconds x the student's CPU cores, / 3600."
    )


def spend(exps: list[Experiment], cpus: Mapping[str, int]) -> Spend:
    """The ledger's totals; `cpus`: student name -> CPU cores of each of its jobs (harness `students`;
    a student no longer configured counts 1)."""
    dollars = tokens = 0.0
    gpu = cpu = 0.0
    for e in exps:
        cores = cpus.get(e.student or "", 1)
        for ev in e.evidence:
            dollars, tokens = dollars + ev.cost.dollars, tokens + ev.cost.tokens
            gpu, cpu = gpu + ev.cost.gpu_seconds, cpu + ev.cost.wall_seconds * cores
        for v in e.verifications:
            gpu += sum(v.candidate_gpu_seconds) + sum(v.baseline_gpu_seconds)
            cpu += (sum(v.candidate_seconds) + sum(v.baseline_seconds)) * cores
        for r in e.budget_reports:
            if r.role == "advisor":  # a student's stopped turn is in its failed evidence's cost
                dollars, tokens = dollars + r.spent.dollars, tokens + r.spent.tokens
    return Spend(experiments=len(exps), dollars=dollars, tokens=int(tokens), gpu_hours=gpu / HOUR, cpu_hours=cpu / HOUR)
