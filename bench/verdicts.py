"""`make bench-verdicts`: the verifier's false-accept rate on null edits and its power on real ones.

Every verification is the real one (`senpai.verifier.judge.verify_all`: train then score both
sides per seed, evaluator from the base revision, sealed holdout, the target's acceptance rule, the
sequential test) on a real local forge, for a synthetic target whose truth is known:

- `train.py` writes `model.json` = {w, noise}: `w` is the params' quality plus the code's `SHIFT`;
  `noise` ~ N(0, SD) drawn from the training seed and the code's `OFFSET`, like the spread of a
  real model over seeds (SD = 0.01 is about what digits shows over seeds);
- the evaluator (protected) prints `acc: w + noise` and never sees the candidate's tree.

Null edits: a seed-only change (a new `OFFSET`: the same expected accuracy, other draws) and a
params file equal to the baseline's.  Real edits: `SHIFT` of 0.005, 0.01 and 0.02 (0.5, 1 and 2
points).  Writes `bench/results/verdicts-<UTC>.json|md`.
"""

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import click
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "SENPAI_DEMO_TOKEN": "", "PYTHONUNBUFFERED": "1"}.items():
    os.environ.setdefault(key, value)

from forge_fixtures import TOKEN, commit_and_push, seed_repository, seed_token  # noqa: E402

from senpai.cli.demo import write_config  # noqa: E402
from senpai.cli.wiring import make_forge, make_tracker  # noqa: E402
from senpai.config.harness import ForgeSettings, load_harness  # noqa: E402
from senpai.forge.github import GitHubForge  # noqa: E402
from senpai.forge.github.admin import create_repository  # noqa: E402
from senpai.forge.localforge.server import LocalForgeServer  # noqa: E402
from senpai.job.context import prepare_turn  # noqa: E402
from senpai.verifier.judge import verify_all  # noqa: E402

SD = 0.01
TRAIN = """import json, os, random
SHIFT, OFFSET = {shift!r}, {offset!r}
p = json.load(open("params.json"))
rng = random.Random(int(os.environ["SEED"]) * 1_000_003 + OFFSET)
model = {{"w": p["w"] + SHIFT, "noise": rng.gauss(0.0, {sd!r})}}
json.dump(model, open(os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.json"), "w"))
print("val:", model["w"] + model["noise"])
print("steps: 100")
"""
SCORE = """import json, os, sys
m = json.load(open(os.path.join(sys.argv[1], "model.json")))
print("acc:", m["w"] + m["noise"])
"""
RULES = {
    "noise_floor": {"rule": "noise_floor", "noise_k": 2.0, "min_floor": 0.005},
    "welch": {"rule": "welch", "alpha": 0.05},
    "bootstrap": {"rule": "bootstrap", "alpha": 0.05},
}


def _files(rule: dict, seeds: int, max_seeds: int) -> dict[str, str]:
    hold = {"command": "python score.py {artifact} {holdout}", "files": ["score.py"], "metric": "acc",
            "seeds": list(range(seeds)), "max_seeds": max_seeds,
            "compute": {"key": "steps", "seconds": False}, **rule}  # fmt: skip
    config = {
        "name": "verdicts", "train": "python train.py",
        "metric": {"name": "val", "direction": "maximize", "source": "stdout"},
        "params": {"file": "params.json", "space": {"w": {"type": "float", "low": 0.0, "high": 1.0}}},
        "holdout": hold, "protected": ["score.py"], "scope": ["params.json", "train.py"],
        "budget": {"wall_seconds": 120, "attempts": 1},
    }  # fmt: skip
    return {
        "senpai.yaml": yaml.safe_dump(config),
        "program.md": "# verdicts\n",
        "params.json": '{"w": 0.8}\n',
        "train.py": TRAIN.format(shift=0.0, offset=0, sd=SD),
        "score.py": SCORE,
    }


def _repo(base_url: str, scratch: Path, rule: dict, seeds: int, max_seeds: int) -> tuple[GitHubForge, Path, Path]:
    name = f"verdicts-{uuid.uuid4().hex[:8]}"
    settings = ForgeSettings(base_url=base_url, repo=f"senpai/{name}", token_env="SENPAI_DEMO_TOKEN", base_branch="advisor")
    create_repository(settings, TOKEN, name)
    forge = GitHubForge(settings, TOKEN)
    work = scratch / name
    seed_repository(forge, work, _files(rule, seeds, max_seeds))
    config = write_config(scratch / f"{name}-run", base_url, 1, 1, repo=settings.repo)
    holdout = scratch / "holdout"
    holdout.mkdir(exist_ok=True)
    return forge, work, config


def _verify(forge: GitHubForge, work: Path, config: Path, change: dict[str, str], scratch: Path) -> dict:
    branch = f"senpai/ada/{uuid.uuid4().hex[:8]}"
    commit_and_push(forge, work, branch, change, start="advisor")
    labels = ["senpai", "student:ada", "status:verifying"]
    pr = forge.create_pull("candidate", "a candidate", head=branch, base="advisor", labels=labels).number
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), scratch / f"turn-{pr}")
    start = time.monotonic()
    v = verify_all(ctx, pr, scratch / "holdout")
    shutil.rmtree(scratch / f"turn-{pr}", ignore_errors=True)
    return {"pr": pr, "passed": v.passed, "seeds": len(v.seeds), "p_value": v.p_value,
            "improvement": v.improvement, "seconds": round(time.monotonic() - start, 2), "reason": v.reason}  # fmt: skip


def _cases(nulls: int, reps: int) -> list[tuple[str, float, dict[str, str]]]:
    """(kind, true improvement, change) for each verification."""
    cases = [("seed-only", 0.0, {"train.py": TRAIN.format(shift=0.0, offset=k, sd=SD)}) for k in range(1, nulls + 1)]
    cases += [("params equal", 0.0, {"params.json": '{"w": 0.80}\n'})] * max(1, nulls // 10)
    for shift in (0.005, 0.01, 0.02):
        cases += [(f"+{shift * 100:g} points", shift, {"train.py": TRAIN.format(shift=shift, offset=100 + k, sd=SD)})
                  for k in range(reps)]  # fmt: skip
    return cases


def table(rows: dict[str, list[dict]]) -> str:
    """One Markdown row per (rule, kind): accepted / verifications, mean seeds, mean seconds."""
    head = "| rule | edit | true improvement | accepted | rate | mean seeds | mean s per verification |\n"
    head += "|---|---|---|---|---|---|---|\n"
    out = []
    for rule, results in rows.items():
        kinds = dict.fromkeys(r["kind"] for r in results)
        for kind in kinds:
            rs = [r for r in results if r["kind"] == kind]
            ok = sum(r["passed"] for r in rs)
            seeds = sum(r["seeds"] for r in rs) / len(rs)
            secs = sum(r["seconds"] for r in rs) / len(rs)
            rate = f"{ok}/{len(rs)} | {ok / len(rs):.0%}"
            out.append(f"| {rule} | {kind} | {rs[0]['truth']:+.3f} | {rate} | {seeds:.1f} | {secs:.1f} |")
    return head + "\n".join(out) + "\n"


@click.command()
@click.option("--nulls", type=click.IntRange(1, 500), default=20, show_default=True, help="Seed-only null edits per rule.")
@click.option("--reps", type=click.IntRange(1, 100), default=5, show_default=True, help="Verifications per real edit size.")
@click.option("--rules", default=",".join(RULES), show_default=True, help="Comma-separated acceptance rules.")
@click.option("--seeds", type=click.IntRange(2, 20), default=3, show_default=True)
@click.option("--max-seeds", type=click.IntRange(2, 50), default=6, show_default=True, help="Sequential test's cap.")
def main(nulls: int, reps: int, rules: str, seeds: int, max_seeds: int) -> None:
    """Run the verifications and write bench/results/verdicts-<timestamp>.{json,md}."""
    scratch = Path(tempfile.mkdtemp(prefix="senpai-verdicts-"))
    os.environ["SENPAI_DEMO_TOKEN"] = TOKEN
    seed_token(scratch / "forge")
    server = LocalForgeServer(scratch / "forge").start()
    rows: dict[str, list[dict]] = {}
    try:
        for rule in rules.split(","):
            forge, work, config = _repo(server.base_url, scratch, RULES[rule], seeds, max_seeds)
            rows[rule] = []
            for i, (kind, truth, change) in enumerate(_cases(nulls, reps)):
                r = {"kind": kind, "truth": truth, **_verify(forge, work, config, change, scratch)}
                rows[rule].append(r)
                verdict = "accepted" if r["passed"] else "refused"
                click.echo(f"{rule} {i + 1}: {kind} -> {verdict} ({r['seeds']} seeds) {r['reason'][:100]}")
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    md = table(rows)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    params = {"nulls": nulls, "reps": reps, "seeds": seeds, "max_seeds": max_seeds, "sd": SD}
    (out / f"verdicts-{stamp}.json").write_text(json.dumps({"params": params, "results": rows}, indent=2) + "\n")
    (out / f"verdicts-{stamp}.md").write_text(f"# verdicts {stamp}\n\n{json.dumps(params)}\n\n{md}")
    click.echo(md + f"\nresults: {out}/verdicts-{stamp}.json")


if __name__ == "__main__":
    main()
