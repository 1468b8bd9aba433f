"""Fixed data for the digits program. Protected: experiments may not change it.

scikit-learn's bundled 8x8 handwritten digits (1,797 images, 10 classes, 64 pixel features 0..16;
no download). Split once, stratified, with a fixed seed: 60% train, 20% validation, 20% holdout.
Features are standardised with the mean and scale of the train split only.
"""

from typing import NamedTuple

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

SPLIT_SEED = 20240611
CLASSES = np.arange(10)


class Splits(NamedTuple):
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_holdout: np.ndarray
    y_holdout: np.ndarray


def load_splits() -> Splits:
    """The three fixed splits, standardised with train statistics (1,077 / 360 / 360 rows)."""
    x, y = load_digits(return_X_y=True)
    x_rest, x_holdout, y_rest, y_holdout = train_test_split(x, y, test_size=0.2, stratify=y, random_state=SPLIT_SEED)
    x_train, x_val, y_train, y_val = train_test_split(x_rest, y_rest, test_size=0.25, stratify=y_rest, random_state=SPLIT_SEED)
    scaler = StandardScaler().fit(x_train)
    return Splits(
        scaler.transform(x_train),
        y_train,
        scaler.transform(x_val),
        y_val,
        scaler.transform(x_holdout),
        y_holdout,
    )
