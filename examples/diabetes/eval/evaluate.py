"""Score a trained diabetes model on the sealed holdout. Protected: experiments may not change it.

The verifier's score step runs this file from the base revision, alone in a directory of its own,
as `python -I -P eval/evaluate.py --artifact DIR --holdout DIR`: it imports installed packages
only, never a file of the repository. It loads DIR/model.skops (the artifact train.py wrote) with
skops, trusting skops' default types plus TRUSTED and nothing else (never `trusted=True`, never
pickle), and scores it on HOLDOUT/holdout.csv, which is not in the repository. It prints

    holdout_mse: <mean squared error of the predicted score, lower is better>

and exits 0; exit 1 (with `holdout_mse: nan`) if the model's predictions are not finite, exit 2 if
the artifact is missing, holds an untrusted type, or is not a regressor of the 10 features.
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
FEATURES = 10
# The one type a gradient-boosting model carries that skops does not trust by default (its fitted trees).
TRUSTED = ["sklearn.tree._tree.Tree"]


def load_model(artifact_dir: Path):
    """The fitted model in `artifact_dir`; raises ValueError naming any type it does not trust."""
    path = artifact_dir / ARTIFACT
    if not path.is_file():
        raise ValueError(f"no {ARTIFACT} in the artifact directory (train.py writes it into $SENPAI_ARTIFACT_DIR)")
    untrusted = sorted(set(skops.io.get_untrusted_types(file=path)) - set(TRUSTED))
    if untrusted:
        raise ValueError(f"{ARTIFACT} holds types the evaluator does not trust: {', '.join(untrusted)}")
    model = skops.io.load(path, trusted=TRUSTED)
    if not hasattr(model, "predict") or getattr(model, "n_features_in_", None) != FEATURES:
        raise ValueError(f"{ARTIFACT} holds a {type(model).__name__}, not a regressor of the {FEATURES} features")
    return model


def load_holdout(holdout_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Features (n, 10) and scores (n,) of the sealed holdout CSV, as floats."""
    rows = np.loadtxt(holdout_dir / HOLDOUT, delimiter=",", skiprows=1, dtype=np.float64)
    return rows[:, :-1], rows[:, -1]


def score(model, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Mean squared error (score units squared) on (x, y); NaN where the predictions are not finite."""
    with threadpool_limits(limits=1):  # small matrices: more BLAS threads only thrash
        predicted = np.asarray(model.predict(x), dtype=np.float64)
    if predicted.shape != y.shape or not np.isfinite(predicted).all():
        return {"holdout_mse": math.nan}
    return {"holdout_mse": float(np.mean((predicted - y) ** 2))}


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
    return 0 if math.isfinite(metrics["holdout_mse"]) else 1


if __name__ == "__main__":
    sys.exit(main())
