"""`make bench-research`: senpai against plain Optuna on the same targets, side by side in one run.

For each bundled target (`examples/digits`, accuracy maximised; `examples/diabetes`, squared error
minimised) and each of `--seeds` seeds:

- **senpai**: the demo loop (`bench/research_senpai.py`: 2 students, search runtime, local fleet,
  `runtime.seed` the seed) until `--experiments` are decided, in a process of its own under a
  subreaper, so its CPU counts every job it launched. Its result is the final base's params.
- **optuna**: a plain study, `TPESampler(seed)`, on the validation metric over the same search
  space (`senpai.agents.search.propose.distribution`), `--experiments` trials, each one training
  of the target's train command (SEED=0, as a student trains). Its result is the best trial's params.

Every result is then re-measured on `--fresh-seeds` seeds none of the runs used (1000, 1001, ...),
as the verifier scores: the target's train command with `SEED` and `SENPAI_ARTIFACT_DIR` in a
scratch copy with the params file written, then `holdout.command` in a fresh directory holding only
`holdout.files`, under `python -I -P`, on the sealed holdout. So are the start point, and each
senpai merge's base before and after it (a merge whose fresh mean is not better than its base's is
counted as not real). The best reachable value comes from a scrambled Sobol sweep
(`optuna.samplers.QMCSampler`) of `--sweep` points x 3 seeds on the holdout: its best 5 points are
re-measured on the fresh seeds, and the best of those is the figure, since the sweep's own maximum of
95 noisy means is biased up (it is shown beside it); so is the sweep's best point on validation, re-measured
likewise: what a search that sees only validation reaches.

Writes bench/results/research-<UTC>.json (every number) and .md (the table), and prints a progress
line as each run starts and ends.
"""

import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "PYTHONUNBUFFERED": "1"}.items():
    os.environ.setdefault(key, value)

from record import utc_stamp, write_result  # noqa: E402  (bench/, beside this script)

from senpai.agents.search.propose import distribution  # noqa: E402
from senpai.cli.example_split import DIABETES, DIGITS, ExampleSplit  # noqa: E402
from senpai.config.target import TargetConfig, load_target  # noqa: E402

TARGETS: dict[str, ExampleSplit] = {"digits": DIGITS, "diabetes": DIABETES}
FRESH_SEED = 1000  # the first fresh seed: none below it is used by a student, a verifier or the sweep
SWEEP_SEEDS = (0, 1, 2)
SWEEP_TOP = 5  # the sweep's best points re-measured on the fresh seeds
# Runs the command in its argv as its child, having made itself the subreaper of its orphans (the
# local fleet's supervisors double-fork), then reaps them all, so their CPU joins its own.
REAPER = """import os, subprocess, sys, time
from senpai.fleet.procs import become_subreaper
become_subreaper()
code = subprocess.call(sys.argv[1:])
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        time.sleep(0.2)
sys.exit(code)
"""


def log(line: str) -> None:
    click.echo(f"[{datetime.now():%H:%M:%S}] {line}", err=True)


def cpu_seconds(who: int) -> float:
    """User + system CPU seconds of `who` (resource.RUSAGE_SELF or RUSAGE_CHILDREN: waited-for descendants)."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def key_values(stdout: str) -> dict[str, str]:
    """The `key: value` lines of `stdout`, the last of each key winning."""
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)


class Measurer:
    """Trains one target's code at given params, in scratch copies under `scratch`, and scores it.

    `validation` is the student's figure (one training, SEED=0, the metric it prints); `holdout` the
    verifier's (train with the seed, then the evaluator alone on the sealed holdout). Holdout values
    are cached by (params, seed): the sweep, the merges and the results share their trainings.
    """

    def __init__(self, example: Path, holdout_dir: Path, scratch: Path) -> None:
        self.example, self.holdout_dir, self.scratch = example, holdout_dir, scratch
        self.target: TargetConfig = load_target(example)
        self.cache: dict[tuple[str, int], float] = {}
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "SENPAI_", "PYTHON"))}
        # the train command's `python` is this interpreter's, as in senpai's jobs
        self.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

    def _copy(self, params: dict) -> Path:
        """A scratch copy of the target with `params` in its params file."""
        repo = Path(tempfile.mkdtemp(prefix="repo-", dir=self.scratch))
        shutil.copytree(self.example, repo, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
        (repo / self.target.params.file).write_text(json.dumps(params))
        return repo

    def _train(self, repo: Path, seed: int, artifact: Path | None) -> dict[str, str]:
        env = {**self.env, "SEED": str(seed), "WANDB_MODE": "disabled"}
        if artifact:
            env["SENPAI_ARTIFACT_DIR"] = str(artifact)
        proc = subprocess.run(self.target.train, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            log(f"    training failed (exit {proc.returncode}, seed {seed}): {proc.stderr.strip()[-300:]}")
            return {}
        return key_values(proc.stdout)

    def validation(self, params: dict) -> float:
        """The validation metric of one training at `params` with SEED=0; NaN if it failed."""
        repo = self._copy(params)
        try:
            return float(self._train(repo, 0, None).get(self.target.metric.name, "nan"))
        finally:
            shutil.rmtree(repo)

    def holdout(self, params: dict, seeds: list[int]) -> list[float]:
        """The holdout metric at `params` for each of `seeds` (NaN where a step failed)."""
        key = json.dumps(params, sort_keys=True)
        todo = [s for s in seeds if (key, s) not in self.cache]
        if todo:
            repo = self._copy(params)
            try:
                for seed in todo:
                    self.cache[(key, seed)] = self._score(repo, seed)
            finally:
                shutil.rmtree(repo)
        return [self.cache[(key, s)] for s in seeds]

    def _score(self, repo: Path, seed: int) -> float:
        h = self.target.holdout
        artifact, work = Path(tempfile.mkdtemp(dir=self.scratch)), Path(tempfile.mkdtemp(dir=self.scratch))
        try:
            if not self._train(repo, seed, artifact):
                return float("nan")
            for rel in h.files:  # the evaluator alone, as the score step extracts it
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(self.example / rel, work / rel)
            argv = h.command.format(artifact=artifact, holdout=self.holdout_dir, seed=seed).split()
            argv = [sys.executable, "-I", "-P", *argv[1:]] if argv[0] in ("python", "python3") else argv
            proc = subprocess.run(argv, cwd=work, env=self.env, capture_output=True, text=True, timeout=600)
            return float(key_values(proc.stdout).get(h.metric, "nan"))
        finally:
            shutil.rmtree(artifact)
            shutil.rmtree(work)


def better(a: float, b: float, direction: str) -> bool:
    return a > b if direction == "maximize" else a < b


def fresh(n: int) -> list[int]:
    return list(range(FRESH_SEED, FRESH_SEED + n))


def summary(values: list[float]) -> dict:
    """Mean and sample stdev of `values` (stdev 0 for one; both NaN if a value is: a training failed)."""
    if any(v != v for v in values):
        return {"mean": math.nan, "sd": math.nan, "values": values}
    return {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0, "values": values}


def senpai_run(m: Measurer, out: Path, experiments: int, seed: int, fresh_seeds: int) -> dict:
    """One senpai run (research_senpai.py under the REAPER): its ledger counts, CPU and fresh-seed holdouts."""
    script = str(ROOT / "bench" / "research_senpai.py")
    argv = [sys.executable, script, "--example", str(m.example), "--holdout", str(m.holdout_dir), "--out", str(out)]
    argv += ["--experiments", str(experiments), "--seed", str(seed)]
    before = cpu_seconds(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", REAPER, *argv], check=True)
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN) - before
    s = json.loads((out / "summary.json").read_text())
    direction, seeds = m.target.holdout_direction, fresh(fresh_seeds)
    for merge in s["merges"]:
        before_v, after_v = (statistics.fmean(m.holdout(s["params"][merge[k]], seeds)) for k in ("before", "after"))
        merge.update(before_fresh=before_v, after_fresh=after_v, real=better(after_v, before_v, direction))
    final = s["params"][s["final_base"]]
    return {**s, "seed": seed, "cpu_seconds": round(cpu, 1), "result_params": final, "holdout": summary(m.holdout(final, seeds))}


def _optuna():
    """optuna, quiet: no line per study or trial, no warning that QMCSampler is experimental."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


def optuna_run(m: Measurer, trials: int, seed: int, fresh_seeds: int) -> dict:
    """A plain TPE study on the validation metric: `trials` trainings; its best trial re-measured."""
    optuna = _optuna()
    dists = {k: distribution(spec) for k, spec in m.target.params.space.items()}
    study = optuna.create_study(direction=m.target.metric.direction, sampler=optuna.samplers.TPESampler(seed=seed))
    before_self, before_children = cpu_seconds(resource.RUSAGE_SELF), cpu_seconds(resource.RUSAGE_CHILDREN)
    for _ in range(trials):
        trial = study.ask(dists)
        value = m.validation(trial.params)
        if value == value:  # not NaN
            study.tell(trial, value)
        else:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
    cpu = cpu_seconds(resource.RUSAGE_SELF) - before_self + cpu_seconds(resource.RUSAGE_CHILDREN) - before_children
    best = study.best_trial.params
    return {"seed": seed, "cpu_seconds": round(cpu, 1), "trainings": trials, "best_validation": study.best_value,
            "result_params": best, "holdout": summary(m.holdout(best, fresh(fresh_seeds)))}  # fmt: skip


def sweep(m: Measurer, points: int, fresh_seeds: int) -> dict:
    """A scrambled Sobol sweep of `points` points x SWEEP_SEEDS on the holdout; its best mean there
    (`best`: biased up, the maximum of many noisy means), and the best of its SWEEP_TOP points
    re-measured on the fresh seeds (`best_fresh`, `params`), on the footing of every other result.

    Those points are chosen on the holdout's own rows, which no search may see: on a small holdout
    (diabetes: 89 rows) that choice fits the rows as much as the seeds. So each point is also
    trained as a student trains it (`Measurer.validation`), and the sweep's best point on validation,
    re-measured on the fresh seeds, is `by_validation_fresh`: what a search of `points` points that
    sees only validation, as senpai's proposer does, reaches."""
    optuna = _optuna()
    dists = {k: distribution(spec) for k, spec in m.target.params.space.items()}
    study = optuna.create_study(sampler=optuna.samplers.QMCSampler(qmc_type="sobol", scramble=True, seed=0))
    means, checks = [], []
    for i in range(points):
        params = study.ask(dists).params
        means.append((statistics.fmean(m.holdout(params, list(SWEEP_SEEDS))), params))
        checks.append((m.validation(params), params))
        if (i + 1) % 10 == 0:
            log(f"    sweep {i + 1}/{points}")
    sign = 1 if m.target.holdout_direction == "maximize" else -1
    top = sorted((x for x in means if x[0] == x[0]), key=lambda x: -sign * x[0])[:SWEEP_TOP]
    log(f"    the sweep's best {len(top)} points on {fresh_seeds} fresh seeds ...")
    again = [(statistics.fmean(m.holdout(params, fresh(fresh_seeds))), params) for _, params in top]
    value, params = max((x for x in again if x[0] == x[0]), key=lambda x: sign * x[0])
    vsign = 1 if m.target.metric.direction == "maximize" else -1
    _, chosen = max((x for x in checks if x[0] == x[0]), key=lambda x: vsign * x[0])
    return {"points": points, "seeds": list(SWEEP_SEEDS), "best": top[0][0], "top": SWEEP_TOP, "best_fresh": value,
            "params": params, "by_validation_fresh": statistics.fmean(m.holdout(chosen, fresh(fresh_seeds))),
            "by_validation_params": chosen}  # fmt: skip


def bench_target(name: str, scratch: Path, experiments: int, seeds: int, points: int, fresh_seeds: int) -> dict:
    """Both sides over `seeds` seeds, the start point and the sweep, for one example target."""
    example, work = ROOT / "examples" / name, scratch / name
    work.mkdir()
    m = Measurer(example, TARGETS[name].seal(work / "holdout"), work)
    start = json.loads((example / m.target.params.file).read_text())
    runs: dict[str, list[dict]] = {"senpai": [], "optuna": []}
    for seed in range(seeds):
        log(f"{name}: senpai, seed {seed}, until {experiments} experiments are decided ...")
        runs["senpai"].append(r := senpai_run(m, work / f"senpai-{seed}", experiments, seed, fresh_seeds))
        log(f"{name}: senpai, seed {seed}: {r['decided']} decided, {r['merged']} merged, holdout {r['holdout']['mean']:.4g}")
        log(f"{name}: optuna, seed {seed}, {experiments} trials ...")
        runs["optuna"].append(r := optuna_run(m, experiments, seed, fresh_seeds))
        log(f"{name}: optuna, seed {seed}: holdout {r['holdout']['mean']:.4g}")
    log(f"{name}: sweep of {points} points x {len(SWEEP_SEEDS)} seeds on the holdout ...")
    best = sweep(m, points, fresh_seeds)
    h = m.target.holdout
    return {"target": name, "metric": h.metric, "direction": m.target.holdout_direction, "verifier_seeds": len(h.seeds),
            "start": summary(m.holdout(start, fresh(fresh_seeds))), "sweep": best, "runs": runs}  # fmt: skip


def _mean_sd(xs: list[float]) -> str:
    return f"{statistics.fmean(xs):.4g} ± {statistics.stdev(xs):.2g}" if len(xs) > 1 else f"{xs[0]:.4g}"


def senpai_cells(runs: list[dict], verifier_seeds: int) -> list:
    """Trainings per decided experiment (its minimum: 1 student run + the verifier's seeds), refusals,
    discarded passes, charged requests per decided experiment, and merges not real of all merges."""
    decided = max(sum(r["decided"] for r in runs), 1)
    trainings = sum(r["student_trainings"] + r["verifier_trainings"] for r in runs) / decided
    merges = [x for r in runs for x in r["merges"]]
    return [
        f"{trainings:.1f} ({1 + verifier_seeds})",
        sum(r["refused_unrun"] for r in runs),
        sum(r["passed_discarded"] for r in runs),
        f"{sum(r['charged_requests'] for r in runs) / decided:.0f}",
        f"{sum(not x['real'] for x in merges)} of {len(merges)}",
    ]


def table(results: list[dict], experiments: int) -> str:
    """One row per target and side; the senpai-only columns are '-' for Optuna."""
    head = ["target (metric, direction)", "side", f"holdout at {experiments} (fresh seeds)",
            "best reachable (fresh seeds; the sweep's own; its best on validation)",
            "start point", "CPU s", "trainings / experiment (min)", "verifications refused unrun",
            "passed, then discarded", "charged requests / experiment", "merges not real on fresh seeds"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in results:
        for side, runs in t["runs"].items():
            label, reached = f"{t['target']} ({t['metric']}, {t['direction']})", [r["holdout"]["mean"] for r in runs]
            sw = t["sweep"]
            best = f"{sw['best_fresh']:.4g} ({sw['best']:.4g}; {sw['by_validation_fresh']:.4g})"
            cells = [label, side, _mean_sd(reached), best, f"{t['start']['mean']:.4g}"]
            cells.append(_mean_sd([r["cpu_seconds"] for r in runs]))
            cells += senpai_cells(runs, t["verifier_seeds"]) if side == "senpai" else ["1.0 (1)", "-", "-", "-", "-"]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


@click.command()
@click.option("--quick", is_flag=True, help="4 experiments, 1 seed, a 6-point sweep, 3 fresh seeds (minutes, not hours).")
@click.option("--experiments", type=int, default=None, help="Experiments decided per senpai run = Optuna trials [20; quick 4].")
@click.option("--seeds", type=int, default=None, help="Runs per side and target, seeds 0.. [3; quick 1].")
@click.option("--sweep", "points", type=int, default=None, help="Sobol points of the best-reachable sweep [95; quick 6].")
@click.option("--fresh-seeds", type=int, default=None, help="Fresh seeds each result is re-measured on [8; quick 3].")
@click.option("--target", "targets", multiple=True, type=click.Choice(sorted(TARGETS)), help="Only these targets [all].")
def main(quick: bool, experiments: int | None, seeds: int | None, points: int | None, fresh_seeds: int | None,
         targets: tuple[str, ...]) -> None:  # fmt: skip
    """Run both sides on every target and write bench/results/research-<UTC>.{json,md}."""
    preset = (4, 1, 6, 3) if quick else (20, 3, 95, 8)
    experiments, seeds, points, fresh_seeds = (
        x if x is not None else d for x, d in zip((experiments, seeds, points, fresh_seeds), preset, strict=True)
    )
    params = {"experiments": experiments, "seeds": seeds, "sweep": points, "fresh_seeds": fresh_seeds, "quick": quick}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="senpai-bench-research-") as scratch:
        results = [bench_target(t, Path(scratch), experiments, seeds, points, fresh_seeds) for t in targets or TARGETS]
    md = table(results, experiments)
    stamp, wall = utc_stamp(), round(time.monotonic() - start, 1)
    data = {"params": params, "wall_seconds": wall, "targets": results}
    written = write_result(f"research-{stamp}", data, f"# research {stamp}\n\n{json.dumps(params)}; {wall} s\n\n{md}")
    click.echo(md + f"\nresults: {written.with_suffix('.json')}")


if __name__ == "__main__":
    main()
