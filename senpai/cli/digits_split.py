"""The demo's fixed split of scikit-learn's bundled digits, and the sealed holdout `senpai demo` writes.

1,797 8x8 images (pixels 0..16, 10 classes; no download), split once, stratified, with
SPLIT_SEED: 60% train (1,077 rows), 20% validation (360), 20% holdout (360). Train and validation
are checked into `examples/digits/data/` (protected; `to_csv` of their split, as
test_example_digits checks); the holdout is never in the repository:
`senpai demo` writes it with `seal_holdout` into a directory outside every work copy and names
that directory in the harness config (`fleet.holdout_dir`). Every file is a CSV with a header
`p0,...,p63,label` and one image per row. (The digits are public data: anyone who loads them
can rebuild the holdout. docs/target-contract.md says what that means for the demo.)
"""

import os
from pathlib import Path

import numpy as np

SPLIT_SEED = 20240611
HEADER = ",".join([*(f"p{i}" for i in range(64)), "label"])
REPO_FILES = {"train": "data/train.csv", "val": "data/val.csv"}
HOLDOUT_FILE = "holdout.csv"


def digits_split() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`{"train"|"val"|"holdout": (x int64 (n, 64), y int64 (n,))}`, the same on every call."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = x.astype(np.int64)
    x_rest, x_hold, y_rest, y_hold = train_test_split(x, y, test_size=0.2, stratify=y, random_state=SPLIT_SEED)
    x_train, x_val, y_train, y_val = train_test_split(x_rest, y_rest, test_size=0.25, stratify=y_rest, random_state=SPLIT_SEED)
    return {"train": (x_train, y_train), "val": (x_val, y_val), "holdout": (x_hold, y_hold)}


def to_csv(x: np.ndarray, y: np.ndarray) -> str:
    """Rows `p0,...,p63,label` under HEADER, integers, newline-terminated."""
    rows = np.column_stack([x, y]).astype(np.int64)
    return "\n".join([HEADER, *(",".join(map(str, r)) for r in rows.tolist())]) + "\n"


def seal_holdout(dest: Path) -> Path:
    """Write the holdout split to `dest/holdout.csv` (dir mode 0700, file 0600); return `dest`.

    `dest` must lie outside every work copy: the verifier's score step gets it as `{holdout}`.
    """
    dest.mkdir(parents=True, exist_ok=True)
    os.chmod(dest, 0o700)
    path = dest / HOLDOUT_FILE
    path.write_text(to_csv(*digits_split()["holdout"]))
    os.chmod(path, 0o600)
    return dest
