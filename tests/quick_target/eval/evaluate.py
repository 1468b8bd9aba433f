"""Score a quick stand-in model on the sealed holdout. Protected: experiments may not change it.

The verifier's score step runs this file from the base revision, alone in a directory of its own,
as `python -I -P eval/evaluate.py --artifact DIR --holdout DIR`: it uses the standard library only.
It reads DIR/model.json (the artifact train.py wrote: `{"format", "params", "seed", "skill"}`) and
the rows of HOLDOUT/holdout.csv (the sealed digits holdout `senpai demo` and the e2e tests write; any
CSV with a header and a last column `label` will do). The model answers each row right with
probability `skill`: row i counts as right when a fixed hash of (seed, i, row) falls below it, so the
score is a deterministic, binomial-like draw per seed. It prints

    holdout_accuracy: <fraction 0..1>
    holdout_log_loss: <nats, lower is better: -log(skill) when right, -log((1 - skill) / 9) when wrong>

and exits 0; exit 1 (with `holdout_accuracy: nan`) if the skill is not finite, exit 2 if the
artifact is missing or is not a quick model. (A test target, not a benchmark: the artifact states
its own skill, so a candidate could forge it. The tests that use it are about the harness.)
"""

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path

ARTIFACT = "model.json"
HOLDOUT = "holdout.csv"
FORMAT = "quick-mlp/1"
CLASSES = 10


def load_model(artifact_dir: Path) -> dict:
    """The model in `artifact_dir`; raises ValueError when it is missing or not a quick model."""
    path = artifact_dir / ARTIFACT
    if not path.is_file():
        raise ValueError(f"no {ARTIFACT} in the artifact directory (train.py writes it into $SENPAI_ARTIFACT_DIR)")
    try:
        model = json.loads(path.read_text())
    except ValueError as e:
        raise ValueError(f"{ARTIFACT} is not JSON: {e}") from None
    if not isinstance(model, dict) or model.get("format") != FORMAT:
        raise ValueError(f"{ARTIFACT} is not a {FORMAT} model")
    if not isinstance(model.get("skill"), (int, float)) or not isinstance(model.get("seed"), int):
        raise ValueError(f"{ARTIFACT} has no numeric skill and integer seed")
    return model


def load_holdout(holdout_dir: Path) -> list[str]:
    """The data rows (header dropped) of the sealed holdout CSV."""
    lines = (holdout_dir / HOLDOUT).read_text().splitlines()
    return [line for line in lines[1:] if line]


def _draw(seed: int, i: int, row: str) -> float:
    """A fixed uniform draw in [0, 1) for row `i` under `seed`."""
    digest = hashlib.sha256(f"{seed}:{i}:{row}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def score(model: dict, rows: list[str]) -> dict[str, float]:
    """Accuracy (fraction) and log loss (nats) on `rows`; NaN where the skill is not finite."""
    p = float(model["skill"])
    if not math.isfinite(p) or not rows:
        return {"holdout_accuracy": math.nan, "holdout_log_loss": math.nan}
    p = min(1 - 1e-15, max(1e-15, p))
    right = [_draw(model["seed"], i, row) < p for i, row in enumerate(rows)]
    losses = [-math.log(p) if ok else -math.log((1 - p) / (CLASSES - 1)) for ok in right]
    return {"holdout_accuracy": sum(right) / len(rows), "holdout_log_loss": sum(losses) / len(rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, required=True, help="directory holding model.json")
    parser.add_argument("--holdout", type=Path, required=True, help="directory holding holdout.csv")
    args = parser.parse_args()
    try:
        model = load_model(args.artifact)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    metrics = score(model, load_holdout(args.holdout))
    for key, value in metrics.items():
        print(f"{key}: {value:.6f}")
    return 0 if math.isfinite(metrics["holdout_accuracy"]) else 1


if __name__ == "__main__":
    sys.exit(main())
