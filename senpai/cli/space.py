"""The first search space `senpai init` writes: which params are hyper-parameters, and a range
around each default.

A script's argparse defaults hold far more than knobs worth searching: the seed (senpai sets
`SEED` per run), paths, the device, data-loader workers, logging and checkpoint intervals,
sampling settings used only to generate, and sentinels (`max_steps -1`: train forever). Searching
them wastes runs at best; at worst a point trains forever or writes elsewhere. So `space_for`
leaves them out, each with the reason init prints, and builds the range of what is left around
its default:

- floats on a log scale from a tenth to ten times the default (learning rates, weight decay, C),
  except fractions (dropout, momentum, betas), searched linearly between half the default and
  halfway to 1;
- integers from half to twice the default, except those that set what one run costs (steps,
  epochs, iterations, estimators, layers, widths, batch and context sizes): from half the default
  up to the default, so that no proposal spends more than the run the user runs today (and
  `budget.wall_seconds` was sized for);
- booleans both ways, other strings as their one choice (add the others by hand).
"""

import math
import re
from typing import Any

# Words of a param's name (split at `_`, `-`, `.`) that say it is no hyper-parameter, by reason.
_NOT_KNOBS = {
    "the seed is senpai's to set, through SEED": {"seed", "seeds", "rng"},
    "a path": {"path", "paths", "dir", "directory", "folder", "file", "filename", "root", "out", "output", "input"},
    "a path or a resume point": {"ckpt", "checkpoint", "resume", "pretrained", "cache", "log", "logs"},
    "where it runs": {"device", "devices", "cuda", "gpu", "gpus", "cpu", "tpu", "dtype", "backend", "compile", "ddp"},
    "a data-loading or parallelism setting": {"workers", "worker", "jobs", "threads", "procs", "pin", "prefetch"},
    "a logging, checkpoint or eval interval": {"interval", "every", "freq", "frequency", "period"},
    "a sampling or eval-only setting": {"sample", "samples", "sampling", "generate", "temperature", "top", "eval", "beam"},
    "a name or a logging switch": {"name", "project", "entity", "tag", "tags", "wandb", "tensorboard", "run", "exp"},
    "a run switch": {"verbose", "debug", "quiet", "dry", "profile", "deterministic", "benchmark", "only"},
}
_EXACT_NOT_KNOBS = {"random_state": "the seed is senpai's to set, through SEED", "data": "a path", "dataset": "a path"}
_EXACT_NOT_KNOBS |= {"init_from": "a path or a resume point"}
_FRACTIONS = {"dropout", "momentum", "beta", "beta1", "beta2", "frac", "fraction", "ratio", "prob", "p", "subsample"}
_FRACTIONS |= {"smoothing", "keep", "rho", "ema"}
_COST = {"steps", "step", "epochs", "epoch", "iters", "iter", "iterations", "estimators", "rounds", "layers", "layer"}
_COST |= {"embd", "embed", "hidden", "width", "depth", "d_model", "dim", "block", "context", "seq", "len", "batch", "units"}
_PATHLIKE = re.compile(r"[/\\]|\.(txt|csv|json|ya?ml|pt|pth|bin|ckpt|npy|npz|pkl|safetensors|parquet)$", re.IGNORECASE)


def _words(key: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1_\2", key).lower()
    return {w for w in re.split(r"[^a-z0-9]+", spaced) if w}


def left_out(key: str, value: Any) -> str | None:
    """Why param `key` with default `value` is not searched (a phrase), None if it is a hyper-parameter."""
    words = _words(key)
    if key.lower() in _EXACT_NOT_KNOBS:
        return _EXACT_NOT_KNOBS[key.lower()]
    for why, names in _NOT_KNOBS.items():
        if words & names:
            return why
    if isinstance(value, str) and _PATHLIKE.search(value):
        return "a path"
    if isinstance(value, int | float) and not isinstance(value, bool) and (value < 0 or value == 0 and isinstance(value, int)):
        return f"{value} reads as a sentinel: off, unlimited or all"
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    return None


def _round(x: float) -> float:
    return float(f"{x:.3g}")


def range_for(key: str, value: Any) -> dict[str, Any] | None:
    """The search range of hyper-parameter `key` around its default `value` (see the module), None if there is none."""
    words = _words(key) | {key.lower()}  # `d_model` is one word
    if isinstance(value, bool):
        return {"type": "categorical", "choices": [value, not value]}
    if isinstance(value, int):
        low = max(1, value // 2)
        high = value if words & _COST else value * 2
        return {"type": "int", "low": low, "high": high} if high > low else None
    if isinstance(value, float) and value > 0 and value < 1 and words & _FRACTIONS:
        return {"type": "float", "low": _round(value / 2), "high": _round((1 + value) / 2)}
    if isinstance(value, float) and value > 0:
        return {"type": "float", "low": _round(value / 10), "high": _round(value * 10), "log": True}
    if isinstance(value, float):  # 0.0: a regulariser or a dropout that is off
        return {"type": "float", "low": 0.0, "high": 0.5 if words & _FRACTIONS else 1.0}
    if isinstance(value, str):
        return {"type": "categorical", "choices": [value]}
    return None


def space_for(params: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """(the search space: key -> a `params.space` entry, the params left out: key -> why), in `params`' order."""
    space, out = {}, {}
    for key, value in params.items():
        why = left_out(key, value)
        spec = None if why else range_for(key, value)
        if spec is not None:
            space[key] = spec
        else:
            out[key] = why or "nothing to search around its default"
    return space, out
