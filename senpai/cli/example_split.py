"""The bundled examples' fixed splits, and the sealed holdouts `senpai demo` and the bench write.

Each example target (`examples/digits`, `examples/diabetes`) trains on one of scikit-learn's
bundled datasets (no download), split once with SPLIT_SEED: 60% train, 20% validation, 20%
holdout. Train and validation are checked into `examples/<name>/data/` (protected; `to_csv` of
their split, as each example's integration test checks); the holdout is never in the repository:
`seal` writes it into a directory outside every work copy, named in the harness config
(`fleet.holdout_dir`). Every file is a CSV with a header (the features, then the label) and one
row per sample. (The data are public: anyone who loads them can rebuild the holdout.
docs/target-contract.md says what that means for the demo.)

- digits: 1,797 8x8 images (pixels 0..16, integers; 10 classes), split stratified by label:
  1,077 / 360 / 360 rows, header `p0,...,p63,label`.
- diabetes: 442 patients (10 raw baseline measurements; the label is a disease progression score,
  25..346), not stratified: 264 / 89 / 89 rows, header `age,sex,bmi,bp,s1,...,s6,label`.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SPLIT_SEED = 20240611
REPO_FILES = {"train": "data/train.csv", "val": "data/val.csv"}
HOLDOUT_FILE = "holdout.csv"
Split = dict[str, tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class ExampleSplit:
    """One bundled dataset: `load` returns (x (n, d), y (n,)); `stratify` splits by label."""

    load: Callable[[], tuple[np.ndarray, np.ndarray]]
    columns: tuple[str, ...]
    stratify: bool

    def split(self) -> Split:
        """`{"train"|"val"|"holdout": (x, y)}`, the same on every call."""
        from sklearn.model_selection import train_test_split

        x, y = self.load()
        x_rest, x_hold, y_rest, y_hold = train_test_split(
            x, y, test_size=0.2, stratify=y if self.stratify else None, random_state=SPLIT_SEED
        )
        x_train, x_val, y_train, y_val = train_test_split(
            x_rest, y_rest, test_size=0.25, stratify=y_rest if self.stratify else None, random_state=SPLIT_SEED
        )
        return {"train": (x_train, y_train), "val": (x_val, y_val), "holdout": (x_hold, y_hold)}

    def to_csv(self, x: np.ndarray, y: np.ndarray) -> str:
        """Rows of `x` then `y` under the header, each value as Python prints it (exact), newline-terminated."""
        rows = np.column_stack([x, y]).tolist()
        return "\n".join([",".join(self.columns), *(",".join(map(str, r)) for r in rows)]) + "\n"

    def seal(self, dest: Path) -> Path:
        """Write the holdout split to `dest/holdout.csv` (dir mode 0700, file 0600); return `dest`.

        `dest` must lie outside every work copy: the verifier's score step gets it as `{holdout}`.
        """
        dest.mkdir(parents=True, exist_ok=True)
        os.chmod(dest, 0o700)
        path = dest / HOLDOUT_FILE
        path.write_text(self.to_csv(*self.split()["holdout"]))
        os.chmod(path, 0o600)
        return dest


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return x.astype(np.int64), y.astype(np.int64)


def _diabetes() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True, scaled=False)
    return x.astype(np.float64), y.astype(np.float64)


DIGITS = ExampleSplit(_digits, (*(f"p{i}" for i in range(64)), "label"), stratify=True)
DIABETES = ExampleSplit(_diabetes, ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "label"), stratify=False)
