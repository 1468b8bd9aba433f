"""Train the quick stand-in "model", report its validation accuracy, save it. Standard library plus wandb.

The model is the params themselves: `skill(params, epoch)` is a smooth, deterministic function of
them (best near 2 wide relu layers, learning_rate_init 1e-2, alpha 1e-3, small batches, more
epochs; the base params score about 0.79, the best points about 0.97), and the validation accuracy
is that skill plus a small fixed per-SEED noise. No data is read and nothing is fitted, so a run
costs the W&B run and no scikit-learn import; under the verifier (WANDB_MODE=disabled) it does not
import wandb at all. It logs to W&B exactly as examples/digits does (one
row per epoch, then the results) and ends with a block you can grep:

    ---
    val_accuracy: 0.787000
    train_seconds: 0.000012
    epochs: 20
    final_loss: 0.239652

`epochs` (= max_iter) is the compute figure the verifier compares. A learning_rate_init of 1 or
more "diverges": val_accuracy is NaN, the run is still logged, then FAIL is printed and the exit
status is 1. When `SENPAI_ARTIFACT_DIR` is set, the model is written there as `model.json`
(`{"format", "params", "seed", "skill"}`: eval/evaluate.py scores it on the sealed holdout).
W&B identity (run id, group, name, project, mode, dir) comes from the WANDB_* environment variables.
"""

import json
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
PARAMS_FILE = HERE / "params.json"
FORMAT = "quick-mlp/1"

# what each choice costs in accuracy (0 = best)
ACTIVATION = {"relu": 0.0, "tanh": 0.01, "logistic": 0.04}
LAYERS = {1: 0.01, 2: 0.0, 3: 0.005}
BATCH = {32: 0.0, 64: 0.002, 128: 0.006, 256: 0.012}


def skill(params: dict, epoch: int) -> float:
    """The model's probability of being right after `epoch` epochs; NaN once it diverges."""
    lr = float(params["learning_rate_init"])
    if not lr < 1.0:
        return math.nan
    penalty = (
        0.08 * (7 - math.log2(params["hidden_width"])) / 4  # width 128 is best, 8 costs 0.08
        + 0.04 * (math.log10(lr) + 2) ** 2  # best at 1e-2
        + 0.005 * (math.log10(params["alpha"]) + 3) ** 2  # best at 1e-3
        + 0.2 * math.exp(-epoch / 8)  # more epochs help less and less
        + ACTIVATION[params["activation"]]
        + LAYERS[params["hidden_layers"]]
        + BATCH[params["batch_size"]]
    )
    return min(0.995, max(0.05, 0.98 - penalty))


def seed_noise(seed: int) -> float:
    """A small fixed offset per seed, -0.006..0.006."""
    return (seed * 7919 % 13 - 6) / 1000


# --------------------------------------------------------------------------- training


class NoRun:
    """What `wandb.init` returns with W&B disabled (the verifier's train step), minus the second of
    importing wandb: a stand-in's training should cost nothing."""

    def log(self, row: dict) -> None:
        pass

    def finish(self, exit_code: int = 0) -> None:
        pass


def start_run(params: dict):
    if os.environ.get("WANDB_MODE") == "disabled":
        return NoRun()
    import wandb

    return wandb.init(config=params)


def main() -> int:
    params = json.loads(PARAMS_FILE.read_text())
    seed = int(os.environ.get("SEED", "0"))
    run = start_run(params)

    start = time.perf_counter()
    epochs = int(params["max_iter"])
    curve = [-math.log(s) if math.isfinite(s := skill(params, e)) else math.nan for e in range(1, epochs + 1)]
    final = skill(params, epochs)
    loss = curve[-1] if curve else math.nan
    # a diverged model has no meaningful accuracy
    val_accuracy = min(1.0, max(0.0, final + seed_noise(seed))) if math.isfinite(loss) else math.nan
    train_seconds = time.perf_counter() - start
    for epoch, epoch_loss in enumerate(curve, start=1):
        run.log({"epoch": epoch, "loss": epoch_loss})

    results = {"val_accuracy": val_accuracy, "train_seconds": train_seconds, "epochs": epochs, "final_loss": loss}
    # Logged as a final row, which also sets the summary: wandb writes `run.summary[k] = nan`
    # as null, but keeps a logged NaN.
    run.log(results)
    failed = not math.isfinite(val_accuracy)
    if os.environ.get("SENPAI_ARTIFACT_DIR") and not failed:
        model = {"format": FORMAT, "params": params, "seed": seed, "skill": final}
        (Path(os.environ["SENPAI_ARTIFACT_DIR"]) / "model.json").write_text(json.dumps(model, sort_keys=True))

    print("---")
    for key, value in results.items():
        print(f"{key}: {value:.6f}" if isinstance(value, float) else f"{key}: {value}")
    if failed:
        print("FAIL")
    run.finish(exit_code=1 if failed else 0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
