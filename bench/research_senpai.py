"""One senpai run of bench/research.py, in a process of its own, and what its ledger says.

`python bench/research_senpai.py --example DIR --holdout DIR --out DIR --experiments N --seed S`
runs what `senpai demo` runs (its `write_config`, `forge_tokens`, `seed_target` and `run_until`:
the local forge, the search runtime, the local fleet, 2 students) with the harness config's
`runtime.seed` set to S, every REST and git request through `tests/fault_proxy.py` with no faults
(the way bench/forge_requests.py counts charged requests: REST answers but 304s), then writes
`<out>/summary.json`: the counts `ledger_counts` reads from the experiments senpai's own ledger
reader returned (`Report.exps`), the charged requests, and the params at each commit the parent
re-measures (the final base, and each merge's base before and after). bench/research.py runs it
under a subreaper, so the CPU of every job it launched is counted as its own.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from fault_proxy import FaultProxy  # noqa: E402

from senpai.cli.demo import forge_tokens, run_until, seed_target, write_config  # noqa: E402
from senpai.config import safe_yaml  # noqa: E402
from senpai.config.harness import load_harness  # noqa: E402
from senpai.config.target import load_target  # noqa: E402
from senpai.ledger.experiment import Experiment  # noqa: E402
from senpai.ledger.labels import ExperimentState  # noqa: E402

STUDENTS = 2  # as `senpai demo`


def trained_seeds(values: list[float], seeds: list[int], reused: dict[int, int]) -> int:
    """Seeds of one verification side that were trained there: measured (a value) and not reused."""
    return sum(1 for seed in seeds[: len(values)] if seed not in reused)


def ledger_counts(exps: list[Experiment]) -> dict:
    """Trainings and verdicts of a finished run, from its experiments' records.

    `student_trainings`: one per evidence attempt that trained (a run, or an arm each);
    `verifier_trainings`: the seeds each verification trained on either side, reused ones left out;
    `refused_unrun`: verifications that trained nothing (a conflict, a path out of scope or
    protected); `passed_discarded`: verifications that passed but were not the one a merge used
    (the base moved, or the PR closed)."""
    student = sum(len(ev.arms) if ev.arms else int(bool(ev.runs)) for e in exps for ev in e.evidence)
    vs = [v for e in exps for v in e.verifications]
    verifier = sum(
        trained_seeds(v.candidate_values, v.seeds, v.candidate_reused)
        + trained_seeds(v.baseline_values, v.seeds, v.baseline_reused)
        for v in vs
    )
    merged = {(d.head, d.base) for e in exps for d in e.decisions if d.verdict == "merge"}
    return {
        "decided": sum(e.state in (ExperimentState.MERGED, ExperimentState.CLOSED) for e in exps),
        "merged": sum(e.state == ExperimentState.MERGED for e in exps),
        "student_trainings": student,
        "verifier_trainings": verifier,
        "verifications": len(vs),
        "refused_unrun": sum(not v.candidate_values and not v.baseline_values for v in vs),
        "passed_discarded": sum(v.passed and (v.candidate, v.baseline) not in merged for v in vs),
    }


def verifications(exps: list[Experiment]) -> list[dict]:
    """Each verification in brief, to audit the counts by: its PR, bases, seeds trained, verdict and reason."""
    return [
        {"pr": v.pr, "candidate": v.candidate[:8], "baseline": v.baseline[:8], "passed": v.passed, "conflict": v.conflict,
         "trained": trained_seeds(v.candidate_values, v.seeds, v.candidate_reused)
         + trained_seeds(v.baseline_values, v.seeds, v.baseline_reused), "reason": v.reason[:200]}
        for e in exps for v in e.verifications
    ]  # fmt: skip


def merges(exps: list[Experiment]) -> list[dict]:
    """Each merge's PR, the base its verification measured and the commit the merge made, in merge order."""
    done = [
        (e, d) for e in exps if e.state == ExperimentState.MERGED and e.merge_commit for d in e.decisions if d.verdict == "merge"
    ]
    return [{"pr": e.pr, "before": d.base, "after": e.merge_commit} for e, d in done if d.base]


def params_at(bare: Path, rev: str, path: str) -> dict:
    """The params file at `rev` of the bare repository `bare`."""
    return json.loads(subprocess.run(["git", "-C", str(bare), "show", f"{rev}:{path}"], capture_output=True, check=True).stdout)


def charged(proxy: FaultProxy, before: dict) -> int:
    """REST requests answered since `before` (`proxy.methods` then) but 304s: what GitHub charges."""
    return sum(n - before.get(k, 0) for k, n in proxy.methods.items() if k[0] == "rest" and not k[2])


@click.command()
@click.option("--example", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--holdout", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--experiments", type=int, required=True, help="Stop once this many are decided.")
@click.option("--seed", type=int, required=True, help="runtime.seed: the search sampler's seed.")
@click.option("--timeout", type=float, default=3600, show_default=True, help="Give up after this many seconds.")
def main(example: Path, holdout: Path, out: Path, experiments: int, seed: int, timeout: float) -> None:
    """Run senpai on EXAMPLE until EXPERIMENTS are decided; write OUT/summary.json."""
    from senpai.forge.localforge.ratelimit import WriteLimits
    from senpai.forge.localforge.server import LocalForgeServer

    target = load_target(example)
    start = time.monotonic()
    server = LocalForgeServer(out / "forge", write_limits=WriteLimits()).start()
    try:
        with FaultProxy(server.base_url, rate=0.0) as proxy:
            repo = f"senpai/{target.name}"
            config = write_config(out, proxy.url, STUDENTS, experiments, repo, holdout, out / "forge")
            harness = safe_yaml.load(config.read_text())
            config.write_text(safe_yaml.dump({**harness, "runtime": {"seed": seed}}))
            cfg = load_harness(config)
            forge_tokens(server, cfg.forge.token_env)
            seed_target(cfg.forge, example, out / "seed")
            before = dict(proxy.methods)
            report = run_until(config, experiments, start + timeout)
            requests = charged(proxy, before)
    finally:
        server.stop()
    bare = out / "forge" / "git" / f"{repo}.git"
    made = merges(report.exps)
    revs = {cfg.forge.base_branch, *(m[k] for m in made for k in ("before", "after"))}
    summary = {
        **ledger_counts(report.exps),
        "charged_requests": requests,
        "wall_seconds": round(time.monotonic() - start, 1),
        "merges": made,
        "verification_log": verifications(report.exps),
        "final_base": cfg.forge.base_branch,
        "params": {rev: params_at(bare, rev, target.params.file) for rev in revs},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
