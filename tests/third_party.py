"""Repositories `senpai init` has never seen, for its tests: files written into a fresh folder, and
a scikit-learn script that prints its metric, a loss, as one JSON line among others; and its twin
in numpy, for the tests whose subject is init's own behaviour, not scikit-learn."""

from pathlib import Path


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """`tmp_path/proj` holding `files` (repo-relative path -> text)."""
    root = tmp_path / "proj"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def ridge_json(rows: int | None = None) -> str:
    """Ridge regression on the diabetes data, its validation MSE printed as `{"val_loss": ...}`; with
    `rows`, it trains and validates on the first `rows` examples only (the rest: a sealed holdout)."""
    cut = f"[:{rows}]" if rows else ""
    return f'''"""Ridge regression on the diabetes data."""
import argparse
import json

from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--random-state", type=int, default=0)
    p.add_argument("--out-dir", default="runs")
    args = p.parse_args()
    x, y = load_diabetes(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(x{cut}, y{cut}, random_state=args.random_state)
    print("fitting ridge, alpha", args.alpha)
    model = Ridge(alpha=args.alpha).fit(x_train, y_train)
    metrics = {{"val_loss": float(mean_squared_error(y_val, model.predict(x_val))), "n_train": len(x_train)}}
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
'''


def ridge_numpy() -> str:
    """`ridge_json`'s twin for the tests of init's own behaviour (re-runs, --force, prompts, next
    steps): the same flags, the same `fitting ridge` and `{"val_loss": ..., "n_train": ...}` lines,
    a `Ridge` (so init reads it as a regressor, its loss as an MSE) on synthetic data, but in numpy,
    its weights saved with safetensors. So init writes its numpy weights evaluator, whose check
    imports numpy and safetensors, not the seconds of scikit-learn and skops each of a validate's
    four interpreters would spend (tests/unit/test_init_evaluator.py keeps init's scikit-learn path)."""
    return '''"""Ridge regression in numpy on synthetic linear data."""
import argparse
import json
import os

import numpy as np
from safetensors.numpy import save_file


class Ridge:
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, x, y):
        self.weight = np.linalg.solve(x.T @ x + self.alpha * np.eye(x.shape[1]), x.T @ y)
        return self

    def predict(self, x):
        return x @ self.weight


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--random-state", type=int, default=0)
    p.add_argument("--out-dir", default="runs")
    args = p.parse_args()
    rng = np.random.default_rng(args.random_state)
    x = rng.normal(size=(200, 3))
    y = x @ np.array([2.0, -1.0, 0.5]) + 0.1 * rng.normal(size=200)
    print("fitting ridge, alpha", args.alpha)
    model = Ridge(alpha=args.alpha).fit(x[:150], y[:150])
    metrics = {"val_loss": float(np.mean((model.predict(x[150:]) - y[150:]) ** 2)), "n_train": 150}
    print(json.dumps(metrics))
    os.makedirs(args.out_dir, exist_ok=True)
    save_file({"weight": model.weight}, os.path.join(args.out_dir, "model.safetensors"))


if __name__ == "__main__":
    main()
'''
