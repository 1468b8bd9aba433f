"""How long one run of the train command as written lasts, and whether a short one reports the
metric, read from the script (never run) for `senpai init`.

- A flag that sets how long training goes (`--max-steps`, `--epochs`, `--num-iters`: every word of
  its name one of `_LENGTH_WORDS`) whose default reads as "no limit" (a negative number, or None)
  makes a train command that does not set it run until `budget.wall_seconds` kills it: makemore's
  `--max-steps -1` trains forever. The search space leaves such a sentinel out (`senpai.cli.space`),
  so nothing else would say so.
- A metric printed only inside `if step % N == 0:` (or `if step > 0 and step % N == 0:`,
  `if not step % N:`) in a loop is not printed at all by a run shorter than N steps: makemore
  prints its test loss every 500 steps.

`warnings` turns both into the one-line notes init prints.
"""

import ast
import shlex
from dataclasses import dataclass
from typing import Any

_LENGTH_WORDS = {"max", "num", "n", "total", "train", "training"}
_LENGTH_WORDS |= {"steps", "step", "epochs", "epoch", "iters", "iter", "iterations", "updates"}
_LENGTH_ITSELF = {"steps", "step", "epochs", "epoch", "iters", "iter", "iterations", "updates"}


@dataclass(frozen=True)
class Endless:
    """An argparse flag of the script (`flags`: its spellings, `dest`: its params key) that sets how
    long training goes, whose `default` reads as no limit."""

    flags: tuple[str, ...]
    dest: str
    default: Any


def unbounded(dest: str, value: Any) -> bool:
    """Whether param `dest` sets how long training goes (`max_steps`, `num_epochs`; not `warmup_steps`)
    and `value` reads as no limit: None or a negative number."""
    words = {w for w in dest.lower().replace("-", "_").split("_") if w}
    sets_length = bool(words & _LENGTH_ITSELF) and words <= _LENGTH_WORDS
    no_limit = value is None or (isinstance(value, int | float) and not isinstance(value, bool) and value < 0)
    return sets_length and no_limit


def periodic_calls(tree: ast.Module) -> dict[ast.Call, str]:
    """Each call made only every N passes of a loop (inside the body of an `if` on `x % N == 0` in a
    loop) -> the source of N."""
    out: dict[ast.Call, str] = {}
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For | ast.AsyncFor | ast.While):
            continue
        for node in ast.walk(loop):
            if isinstance(node, ast.If) and (every := _modulus(node.test)):
                for call in (c for stmt in node.body for c in ast.walk(stmt) if isinstance(c, ast.Call)):
                    out.setdefault(call, every)
    return out


def _modulus(test: ast.expr) -> str | None:
    """The N of `x % N == 0` or `not x % N` anywhere in an `if` test, None if it has neither."""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            zero = node.comparators[0]
            mod = node.left
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            zero, mod = ast.Constant(0), node.operand
        else:
            continue
        if isinstance(zero, ast.Constant) and zero.value == 0 and _is_mod(mod):
            return ast.unparse(mod.right)  # type: ignore[attr-defined]
    return None


def _is_mod(node: ast.expr) -> bool:
    """`x % N` as arithmetic, not `"..." % values` (string formatting)."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and not isinstance(node.left, ast.Constant)


def warnings(
    command: str,
    script: str | None,
    endless: list[Endless],
    params: dict[str, Any],
    params_file: str,
    every: str | None,
    metric: str,
) -> list[str]:
    """The lines init prints about a run of `command` (the train command, which runs `script`):
    each `endless` flag that neither the command nor `params` sets to a limit, and `every`, the N
    of the loop that alone prints `metric` (None: printed elsewhere too). A command that does not
    run the script itself (`make train`) may set the flags where init cannot see: none are named."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out = []
    direct = script is not None and script in (w.removeprefix("./") for w in words)
    for e in endless if direct else []:
        if any(w == f or w.startswith(f"{f}=") for w in words for f in e.flags):
            continue
        if e.dest in params and not unbounded(e.dest, params[e.dest]):
            continue
        flag = next((f for f in e.flags if f.startswith("--")), e.flags[0])
        out.append(
            f"warning: {script} defaults {flag} to {e.default!r} (no limit) and the train command does not set it, so a "
            f"run may never end before budget.wall_seconds kills it: add `{flag} N` to the train command, "
            f"or `{e.dest}: N` to {params_file}"
        )
    if every is not None:
        out.append(
            f"warning: {script or 'the train script'} prints {metric} only every {every} steps (inside `if ... % {every} == 0`), "
            f"so a shorter run reports none: print it once more after the loop"
        )
    return out
