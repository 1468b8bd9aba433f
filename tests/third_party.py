"""Repositories `senpai init` has never seen, for its tests: files written into a fresh folder, and
a scikit-learn script that prints its metric, a loss, as one JSON line among others."""

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
