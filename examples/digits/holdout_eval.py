"""Holdout evaluation of the current params.json. Protected: experiments may not change it.

Trains the MLP that params.json describes on the train and validation splits together, seeded
with --seed, for `max_iter` epochs, and prints `holdout_accuracy: <fraction>` for the holdout
split, which training never sees. It does not import train.py, so edits there cannot reach this
score. A diverged loss prints `holdout_accuracy: nan` and exits 1. No W&B.
"""

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from data import CLASSES, load_splits
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from threadpoolctl import threadpool_limits

PARAMS_FILE = Path(__file__).with_name("params.json")


def holdout_accuracy(params: dict, seed: int) -> float:
    """Accuracy on the holdout split (0..1), or NaN if the loss diverged."""
    splits = load_splits()
    x = np.vstack([splits.x_train, splits.x_val])
    y = np.concatenate([splits.y_train, splits.y_val])
    model = MLPClassifier(
        hidden_layer_sizes=(int(params["hidden_width"]),) * int(params["hidden_layers"]),
        activation=params["activation"],
        alpha=float(params["alpha"]),
        learning_rate_init=float(params["learning_rate_init"]),
        batch_size=int(params["batch_size"]),
        random_state=seed,
    )
    with threadpool_limits(limits=1):  # small matrices: more BLAS threads only thrash
        for _ in range(int(params["max_iter"])):
            model.partial_fit(x, y, classes=CLASSES)
            if not math.isfinite(model.loss_):
                return math.nan
        return float(model.score(splits.x_holdout, splits.y_holdout))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    accuracy = holdout_accuracy(json.loads(PARAMS_FILE.read_text()), args.seed)
    print(f"holdout_accuracy: {accuracy:.6f}")
    return 0 if math.isfinite(accuracy) else 1


if __name__ == "__main__":
    sys.exit(main())
