"""Train a small MLP on the digits train split, report its validation accuracy, save the model.

Reads params.json, fits a scikit-learn Pipeline (feature scaling, then an MLPClassifier) on
data/train.csv for `max_iter` epochs, logs each epoch's loss and the result to W&B, and ends with
a block you can grep:

    ---
    val_accuracy: 0.972222
    train_seconds: 0.412
    epochs: 40
    final_loss: 0.012345

The keys match the W&B summary keys; `epochs` is the compute figure the verifier compares. If the
loss diverges, val_accuracy is NaN: the run is still logged, then FAIL is printed and the exit
status is 1. `SEED` (env, default 0) seeds the model. When `SENPAI_ARTIFACT_DIR` is set, the fitted
pipeline is written there as `model.skops` (skops, never pickle) for the verifier to score.
W&B identity (run id, group, name, project, mode, dir) comes from the WANDB_* environment variables.
"""

import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import skops.io
import wandb
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

HERE = Path(__file__).parent
PARAMS_FILE = HERE / "params.json"

warnings.filterwarnings("ignore", category=ConvergenceWarning)


def load_split(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (n, 64) as floats 0..16 and labels (n,) of data/<name>.csv."""
    rows = np.loadtxt(HERE / "data" / f"{name}.csv", delimiter=",", skiprows=1, dtype=np.int64)
    return rows[:, :-1].astype(np.float64), rows[:, -1]


# --------------------------------------------------------------------------- model


def build_model(params: dict, seed: int) -> Pipeline:
    """Standardised pixels into `hidden_layers` layers of `hidden_width` units, trained with Adam."""
    mlp = MLPClassifier(
        hidden_layer_sizes=(params["hidden_width"],) * params["hidden_layers"],
        activation=params["activation"],
        alpha=params["alpha"],
        learning_rate_init=params["learning_rate_init"],
        batch_size=params["batch_size"],
        max_iter=params["max_iter"],
        n_iter_no_change=params["max_iter"],  # train every epoch asked for
        random_state=seed,
    )
    return Pipeline([("scale", StandardScaler()), ("mlp", mlp)])


# --------------------------------------------------------------------------- training


def main() -> int:
    params = json.loads(PARAMS_FILE.read_text())
    seed = int(os.environ.get("SEED", "0"))
    x_train, y_train = load_split("train")
    x_val, y_val = load_split("val")
    run = wandb.init(config=params)

    model = build_model(params, seed)
    start = time.perf_counter()
    # One BLAS thread: the matrices are small, and on a busy machine more threads thrash (10x+).
    with threadpool_limits(limits=1):
        model.fit(x_train, y_train)
        mlp = model[-1]
        loss = float(mlp.loss_)
        # a diverged model has no meaningful accuracy
        val_accuracy = float(model.score(x_val, y_val)) if math.isfinite(loss) else math.nan
    train_seconds = time.perf_counter() - start
    for epoch, epoch_loss in enumerate(getattr(mlp, "loss_curve_", []), start=1):
        run.log({"epoch": epoch, "loss": epoch_loss})

    results = {"val_accuracy": val_accuracy, "train_seconds": train_seconds, "epochs": int(mlp.n_iter_), "final_loss": loss}
    # Logged as a final row, which also sets the summary: wandb writes `run.summary[k] = nan`
    # as null, but keeps a logged NaN.
    run.log(results)
    failed = not math.isfinite(val_accuracy)
    if os.environ.get("SENPAI_ARTIFACT_DIR") and not failed:
        skops.io.dump(model, Path(os.environ["SENPAI_ARTIFACT_DIR"]) / "model.skops")

    print("---")
    for key, value in results.items():
        print(f"{key}: {value:.6f}" if isinstance(value, float) else f"{key}: {value}")
    if failed:
        print("FAIL")
    run.finish(exit_code=1 if failed else 0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
