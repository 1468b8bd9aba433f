"""`senpai init` on a PyTorch script checks what it wrote by running the torch evaluator on its
sample (`senpai validate`), under the score step's interpreter. Where that interpreter has no torch
(the test extra installs none), init writes its files and then stops, naming torch."""

import importlib.util

from senpai.errors import ConfigError

HAS_TORCH = importlib.util.find_spec("torch") is not None


def initialised(result) -> None:
    """Assert that `senpai init` (click's runner `result`) on a PyTorch script ended as it must here."""
    if HAS_TORCH:
        assert result.exit_code == 0, result.output
    else:
        assert isinstance(result.exception, ConfigError), result.output
        assert "No module named 'torch'" in str(result.exception)
