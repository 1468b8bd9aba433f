"""Train gradient-boosted trees on the diabetes train split, report the validation MSE, save the model.

Reads params.json, fits a scikit-learn GradientBoostingRegressor (squared error, `n_estimators`
trees) on data/train.csv, logs each tree's training loss and the result to W&B, and ends with a
block you can grep:

    ---
    val_mse: 3310.123456
    train_seconds: 0.212
    trees: 120
    final_loss: 1234.567890

The keys match the W&B summary keys; `trees` is the compute figure the verifier compares. If the
fit is not finite, val_mse is NaN: the run is still logged, then FAIL is printed and the exit
status is 1. `SEED` (env, default 0) seeds the model (its row subsampling and feature draws). When
`SENPAI_ARTIFACT_DIR` is set, the fitted model is written there as `model.skops` (skops, never
pickle) for the verifier to score. W&B identity (run id, group, name, project, mode, dir) comes
from the WANDB_* environment variables.
"""

import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import skops.io
import wandb
from sklearn.ensemble import GradientBoostingRegressor
from threadpoolctl import threadpool_limits

HERE = Path(__file__).parent
PARAMS_FILE = HERE / "params.json"


def load_split(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (n, 10) and disease progression scores (n,) of data/<name>.csv, as floats."""
    rows = np.loadtxt(HERE / "data" / f"{name}.csv", delimiter=",", skiprows=1, dtype=np.float64)
    return rows[:, :-1], rows[:, -1]


# --------------------------------------------------------------------------- model


def build_model(params: dict, seed: int) -> GradientBoostingRegressor:
    """`n_estimators` trees of depth `max_depth`, each fitted on a `subsample` of the rows."""
    return GradientBoostingRegressor(
        n_estimators=params["n_estimators"],
        learning_rate=params["learning_rate"],
        max_depth=params["max_depth"],
        subsample=params["subsample"],
        min_samples_leaf=params["min_samples_leaf"],
        max_features=params["max_features"],
        random_state=seed,
    )


# --------------------------------------------------------------------------- training


def main() -> int:
    params = json.loads(PARAMS_FILE.read_text())
    seed = int(os.environ.get("SEED", "0"))
    x_train, y_train = load_split("train")
    x_val, y_val = load_split("val")
    run = wandb.init(config=params)

    model = build_model(params, seed)
    start = time.perf_counter()
    with threadpool_limits(limits=1):  # small matrices: more BLAS threads only thrash on a busy machine
        model.fit(x_train, y_train)
        predicted = model.predict(x_val)
    train_seconds = time.perf_counter() - start
    for tree, loss in enumerate(model.train_score_, start=1):
        run.log({"tree": tree, "loss": float(loss)})
    loss = float(model.train_score_[-1])
    val_mse = float(np.mean((predicted - y_val) ** 2)) if np.isfinite(predicted).all() else math.nan

    results = {"val_mse": val_mse, "train_seconds": train_seconds, "trees": int(model.n_estimators_), "final_loss": loss}
    # Logged as a final row, which also sets the summary: wandb writes `run.summary[k] = nan`
    # as null, but keeps a logged NaN.
    run.log(results)
    failed = not math.isfinite(val_mse)
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
