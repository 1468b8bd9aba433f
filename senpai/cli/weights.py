"""The evaluator `senpai init` writes for a network saved as safetensors weights (PyTorch, or numpy arrays).

safetensors holds tensors and string metadata, never code (unlike `torch.save`, a pickle), so the
score step must build the module itself before it loads the weights into it. It builds it from a
model file of the repository, protected and listed in `holdout.files` (the score step's directory
holds exactly those files, from the base revision): the local module the train script imports
that defines the network (`model_file`), else `eval/model.py`, which init writes as a stub to fill
in. The train step saves the params the module is built with as the file's metadata
(`metadata={"params": json.dumps(params)}`), and the evaluator calls the model file's
`build(**params)`.

The target's interpreter may hold numpy and not scikit-learn, so the evaluator computes each
quantity of `quantities.QUANTITIES` with numpy alone (`BODIES`), from the module's outputs: logits
(n, classes) for a classifier, predictions (n,) or (n, 1) for a regressor.
"""

import ast
from collections.abc import Callable
from pathlib import PurePosixPath

FRAMEWORKS = ("torch", "numpy")  # `Detected.framework` values whose artifact is model.safetensors
STUB = "eval/model.py"  # the model file init writes when the script imports none

# score(out, y) -> float, with `proba` (the softmax of `out`) or `pred` (out as (n,)) worked out above it
BODIES = {
    "accuracy": "return float(np.mean(proba.argmax(axis=1) == y))",
    "log_loss": "return float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), y], 1e-15, 1.0))))",
    "f1": (
        "pred = proba.argmax(axis=1)\n"
        "f1 = [2 * np.sum((pred == k) & (y == k)) / max(np.sum(pred == k) + np.sum(y == k), 1) for k in np.union1d(y, pred)]\n"
        "return float(np.mean(f1))"
    ),
    "auc": (
        "classes = np.unique(y) if proba.shape[1] > 2 else np.array([1])  # binary: the positive class alone\n"
        "return float(np.mean([_auc(proba[:, k], y == k) for k in classes]))"
    ),
    "mse": "return float(np.mean((pred - y) ** 2))",
    "rmse": "return float(np.sqrt(np.mean((pred - y) ** 2)))",
    "mae": "return float(np.mean(np.abs(pred - y)))",
    "r2": "return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))",
}


def model_file(
    script: str | None, tree: ast.Module | None, regular: Callable[[str], bool], read: Callable[[str], str]
) -> str | None:
    """The repo-relative `.py` the train script `script` imports (`from model import Net`, `import
    nets.mlp`; beside the script or at the root) that defines the network: a class whose base ends
    in `Module`, or one with a `load_state_dict` method. None if it imports none (the network may be
    defined in the script itself, which experiments change: then `STUB`)."""
    return next((path for path in local_modules(script, tree, regular) if _defines_network(read(path))), None)


def local_modules(script: str | None, tree: ast.Module | None, regular: Callable[[str], bool]) -> list[str]:
    """The repo-relative `.py` files train script `script` (parsed: `tree`) imports, in its order:
    `from model import Net`, `import nets.mlp`, beside the script or at the root ([] without a script)."""
    if script is None or tree is None:
        return []
    here = PurePosixPath(script).parent
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level]
    out = []
    for name in names:
        rel = name.replace(".", "/") + ".py"
        out += [path for path in dict.fromkeys([(here / rel).as_posix(), rel]) if path != script and regular(path)]
    return list(dict.fromkeys(out))


def _defines_network(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [b.attr if isinstance(b, ast.Attribute) else b.id if isinstance(b, ast.Name) else "" for b in node.bases]
        methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
        if any(b.endswith("Module") for b in bases) or "load_state_dict" in methods:
            return True
    return False
