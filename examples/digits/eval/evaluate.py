"""Score a trained digits model on the sealed holdout. Protected: experiments may not change it.

The verifier's score step runs this file from the base revision, alone in a directory of its own,
as `python -I -P eval/evaluate.py --artifact DIR --holdout DIR`: it imports installed packages
only, never a file of the repository. It loads DIR/model.skops (the artifact train.py wrote) with
skops, trusting skops' default types plus TRUSTED and nothing else (never `trusted=True`, never
pickle), and scores it on HOLDOUT/holdout.csv, which is not in the repository. It prints

    holdout_accuracy: <fraction 0..1>
    holdout_log_loss: <nats, lower is better>

and exits 0; exit 1 (with `holdout_accuracy: nan`) if the model's outputs are not finite, exit 2 if
the artifact is missing, holds an untrusted type, or is not a classifier of 8x8 digits.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import skops.io
from threadpoolctl import threadpool_limits

ARTIFACT = "model.skops"
HOLDOUT = "holdout.csv"
CLASSES = list(range(10))
# Types an MLP pipeline carries that skops does not trust by default (its optimiser state).
TRUSTED = [
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
]


def load_model(artifact_dir: Path):
    """The fitted model in `artifact_dir`; raises ValueError naming any type it does not trust."""
    path = artifact_dir / ARTIFACT
    if not path.is_file():
        raise ValueError(f"no {ARTIFACT} in the artifact directory (train.py writes it into $SENPAI_ARTIFACT_DIR)")
    untrusted = sorted(set(skops.io.get_untrusted_types(file=path)) - set(TRUSTED))
    if untrusted:
        raise ValueError(f"{ARTIFACT} holds types the evaluator does not trust: {', '.join(untrusted)}")
    model = skops.io.load(path, trusted=TRUSTED)
    if not (hasattr(model, "predict") and hasattr(model, "predict_proba")):
        raise ValueError(f"{ARTIFACT} holds a {type(model).__name__}, not a classifier with predict_proba")
    if [int(c) for c in getattr(model, "classes_", [])] != CLASSES:
        raise ValueError(f"{ARTIFACT} does not classify the 10 digits 0..9 (classes_ {getattr(model, 'classes_', None)})")
    return model


def load_holdout(holdout_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (n, 64) as floats and labels (n,) of the sealed holdout CSV."""
    rows = np.loadtxt(holdout_dir / HOLDOUT, delimiter=",", skiprows=1, dtype=np.int64)
    return rows[:, :-1].astype(np.float64), rows[:, -1]


def score(model, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Accuracy (fraction) and log loss (nats) on (x, y); NaN where the outputs are not finite."""
    with threadpool_limits(limits=1):  # small matrices: more BLAS threads only thrash
        proba = np.asarray(model.predict_proba(x), dtype=np.float64)
        predicted = np.asarray(model.predict(x))
    if proba.shape != (len(y), len(CLASSES)) or not np.isfinite(proba).all():
        return {"holdout_accuracy": math.nan, "holdout_log_loss": math.nan}
    truth = np.clip(proba[np.arange(len(y)), y], 1e-15, 1.0)  # columns follow classes_, checked to be 0..9
    return {"holdout_accuracy": float(np.mean(predicted == y)), "holdout_log_loss": float(-np.mean(np.log(truth)))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, required=True, help="directory holding model.skops")
    parser.add_argument("--holdout", type=Path, required=True, help="directory holding holdout.csv")
    args = parser.parse_args()
    try:
        model = load_model(args.artifact)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    metrics = score(model, *load_holdout(args.holdout))
    for key, value in metrics.items():
        print(f"{key}: {value:.6f}")
    return 0 if math.isfinite(metrics["holdout_accuracy"]) else 1


if __name__ == "__main__":
    sys.exit(main())
