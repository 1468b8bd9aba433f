"""Third-party scripts `senpai init` has never seen, from the script to a first verified experiment
(issue 27, "Done when"): `senpai init --yes`, the snippets it prints pasted in as written,
`senpai validate`, then the demo's loop (local forge, local fleet, search runtime) until the
measured start and one proposal are decided: one student run of the proposal, one verification.

Each script's base params sit at the worst end of its search space (the test moves them there
after init), so every proposal beats the base on validation and goes to the verifier."""

import json
import runpy
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from forge_fixtures import TOKEN
from third_party import ridge_json

from senpai.cli.demo import run_until, write_config
from senpai.cli.main import cli
from senpai.cli.scaffold import Advice, Answers, advice, detect
from senpai.cli.seed import seed_target
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config import safe_yaml
from senpai.config.harness import load_harness
from senpai.config.target import load_target
from senpai.errors import ConfigError
from senpai.ledger.table import LedgerReader

TRAIN_ROWS = 354  # of diabetes' 442: the script trains and validates on these; the sealed holdout is the rest

RIDGE_JSON = ridge_json(TRAIN_ROWS)  # its metric, the validation MSE as a loss, printed as one JSON line among others

# A third-party-style network: argparse flags, not named train.py, the loss printed inside a longer
# line, the weights saved as safetensors into its own folder. numpy stands in for torch (too heavy
# for the test extra): the evaluator's torch variant differs in `safetensors.torch` and the module.
MLP = '''"""A two-layer tanh network in numpy, and the synthetic two-class data it learns."""

import numpy as np


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`n` points in 4 dimensions (float32) and their class, 0 or 1."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, ((x[:, 0] * x[:, 1] + x[:, 2] - x[:, 3]) > 0).astype(np.int64)


class MLP:
    def __init__(self, n_in: int, hidden: int, n_out: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.w1 = (rng.normal(size=(n_in, hidden)) / np.sqrt(n_in)).astype(np.float32)
        self.b1 = np.zeros(hidden, np.float32)
        self.w2 = (rng.normal(size=(hidden, n_out)) / np.sqrt(hidden)).astype(np.float32)
        self.b2 = np.zeros(n_out, np.float32)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x @ self.w1 + self.b1) @ self.w2 + self.b2

    def loss(self, x: np.ndarray, y: np.ndarray) -> float:
        z = self(x)
        z = z - z.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y]))

    def step(self, x: np.ndarray, y: np.ndarray, lr: float) -> float:
        h = np.tanh(x @ self.w1 + self.b1)
        z = h @ self.w2 + self.b2
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        loss = float(-np.mean(np.log(p[np.arange(len(y)), y])))
        dz = p
        dz[np.arange(len(y)), y] -= 1
        dz /= len(y)
        dh = (dz @ self.w2.T) * (1 - h**2)
        self.w2 -= lr * h.T @ dz
        self.b2 -= lr * dz.sum(axis=0)
        self.w1 -= lr * x.T @ dh
        self.b1 -= lr * dh.sum(axis=0)
        return loss

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"w1": self.w1, "b1": self.b1, "w2": self.w2, "b2": self.b2}

    def load_state_dict(self, weights: dict[str, np.ndarray]) -> None:
        for name, value in self.state_dict().items():
            if weights[name].shape != value.shape:
                raise ValueError(f"{name}: shape {weights[name].shape}, expected {value.shape}")
            setattr(self, name, weights[name])
'''
FIT_MLP = """\"\"\"Train a two-layer network on the synthetic data, full batch.\"\"\"
import argparse
import os

from safetensors.numpy import save_file

from mlp import MLP, data


def main():
    parser = argparse.ArgumentParser(description="a tiny network")
    parser.add_argument("--learning-rate", "-l", type=float, default=0.5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--eval-interval", type=int, default=50)
    parser.add_argument("--seed", type=int, default=3407)
    parser.add_argument("-o", "--work-dir", type=str, default="out")
    args = parser.parse_args()
    x_train, y_train = data(400, 0)
    x_test, y_test = data(200, 1)
    model = MLP(x_train.shape[1], 8, 2, args.seed)
    for step in range(args.steps):
        train_loss = model.step(x_train, y_train, args.learning_rate)
        if step % args.eval_interval == 0 or step == args.steps - 1:
            print(f"step {step} | train loss: {train_loss:.4f} | test loss: {model.loss(x_test, y_test):.4f}")
    os.makedirs(args.work_dir, exist_ok=True)
    save_file(model.state_dict(), os.path.join(args.work_dir, "model.safetensors"))


if __name__ == "__main__":
    main()
"""

BUILD = """

def build(**_params):
    \"\"\"The network fit_mlp.py trains: 4 features, 8 hidden units, 2 classes (its params set no shape).\"\"\"
    return MLP(4, 8, 2)
"""


def paste_advice(root: Path, script: str, text: str, parser: str) -> list[Advice]:
    """Write `script` as `text` with exactly the snippets `senpai init` printed for it: the params
    before `parser`.parse_args(), SEED and the artifact at the end of main(); return the other advice."""
    todo = advice(answers_of(root), detect(root, load_target(root).train))
    params, seed, artifact = (next(a.snippet for a in todo if k in a.snippet) for k in ("set_defaults", "SEED", "ARTIFACT_DIR"))
    indent = lambda s: textwrap.indent(s, "    ")  # noqa: E731  (main()'s body)
    parse = f"    args = {parser}.parse_args()\n"
    text = text.replace(parse, f"{indent(params.replace('parser.', f'{parser}.'))}\n{parse}")
    text = text.replace("\n\nif __name__", f"{indent(seed)}\n{indent(artifact)}\n\n\nif __name__")
    (root / script).write_text(text)
    return [a for a in todo if a.snippet not in (params, seed, artifact)]


def answers_of(root: Path) -> Answers:
    """The answers init wrote into `root`'s senpai.yaml."""
    t = load_target(root)
    return Answers(t.train, t.metric.name, t.metric.direction, t.params.file, t.holdout.metric.removeprefix("holdout_"))


def at_the_edge(root: Path, ends: dict[str, str], seeds: list[int]) -> None:
    """Move each param of `ends` to that end ("low"/"high") of its search space, and verify on `seeds`."""
    target = load_target(root)
    path = root / target.params.file
    edges = {key: getattr(target.params.space[key], end) for key, end in ends.items()}
    path.write_text(json.dumps({**json.loads(path.read_text()), **edges}))
    data = safe_yaml.load((root / "senpai.yaml").read_text())
    data["holdout"]["seeds"] = seeds  # two repeats keep the test fast (as tests/e2e do); init writes three
    (root / "senpai.yaml").write_text(safe_yaml.dump(data))


def loop(local_forge, tmp_path: Path, root: Path, holdout: Path, monkeypatch) -> Path:
    """Push `root` to the local forge and run the loop (one student) until two experiments are decided."""
    config = write_config(tmp_path / "run", local_forge.base_url, 1, 2, repo=f"senpai/{root.name}", holdout=holdout)
    cfg = load_harness(config)
    monkeypatch.setenv(cfg.forge.token_env, TOKEN)
    seed_target(cfg.forge, root, tmp_path / "seed")
    report = run_until(config, 2, time.monotonic() + 400)
    assert report.decided >= 2, [(e.pr, e.state, e.error) for e in report.exps]
    return config


@pytest.mark.long
def test_a_scikit_learn_script_printing_its_loss_as_json_reaches_a_verified_experiment(local_forge, tmp_path, monkeypatch):
    # scikit-learn (scipy: seconds) when this test runs, not when the suite is collected
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Ridge
    from sklearn.metrics import mean_squared_error
    from sklearn.model_selection import train_test_split

    root = tmp_path / "ridge"
    root.mkdir()
    (root / "fit_ridge.py").write_text(RIDGE_JSON)
    result = CliRunner().invoke(cli, ["init", str(root), "--yes"])
    assert result.exit_code == 0, result.output
    t = load_target(root)
    # the train metric is a loss, and so is what the evaluator prints: minimised on both sides
    assert (t.train, t.metric.name, t.metric.source, t.metric.direction) == (
        "python fit_ridge.py",
        "val_loss",
        "stdout",
        "minimize",
    )
    assert (t.holdout.metric, t.holdout_direction) == ("holdout_mse", "minimize")
    assert "holdout_mse" in (root / "eval/evaluate.py").read_text()
    assert not paste_advice(root, "fit_ridge.py", RIDGE_JSON, "p")
    assert not advice(answers_of(root), detect(root, t.train))  # the script fits the contract now
    at_the_edge(root, {"alpha": "high"}, [0, 1])  # the MSE grows with alpha over the whole space
    validated = CliRunner().invoke(cli, ["validate", str(root)])
    assert validated.exit_code == 0, validated.output

    holdout = tmp_path / "holdout"  # sealed: outside the target
    holdout.mkdir()
    x, y = load_diabetes(return_X_y=True)
    header = ",".join([*(f"f{i}" for i in range(x.shape[1])), "label"])
    np.savetxt(holdout / "holdout.csv", np.column_stack([x, y])[TRAIN_ROWS:], delimiter=",", header=header, comments="")

    config = loop(local_forge, tmp_path, root, holdout, monkeypatch)
    cfg = load_harness(config)
    exps = LedgerReader(make_forge(cfg), make_tracker(cfg)).experiments()
    proposal = next(e for e in exps if e.hypothesis and not e.hypothesis.measures_base)
    (ev,) = proposal.evidence  # one student run
    alpha = proposal.hypothesis.params["alpha"]
    x_train, x_val, y_train, y_val = train_test_split(x[:TRAIN_ROWS], y[:TRAIN_ROWS], random_state=0)  # as the script splits
    printed = mean_squared_error(y_val, Ridge(alpha=alpha).fit(x_train, y_train).predict(x_val))
    assert ev.primary.name == "val_loss" and ev.primary.value == printed  # read from the JSON line, as printed
    (v,) = proposal.verifications  # one verification, of the holdout MSE, judged lower-is-better
    assert (v.metric, v.direction) == ("holdout_mse", "minimize")
    assert max(v.candidate_values) < min(v.baseline_values) and v.improvement > 0
    assert proposal.state == "merged", proposal.decision


@pytest.mark.long
def test_a_third_party_network_saving_safetensors_reaches_a_verified_experiment(local_forge, tmp_path, monkeypatch):
    root = tmp_path / "tinynet"
    root.mkdir()
    (root / "mlp.py").write_text(MLP)
    (root / "fit_mlp.py").write_text(FIT_MLP)
    init = ["init", str(root), "--yes", "--holdout-metric", "log_loss"]
    result = CliRunner().invoke(cli, init)
    assert isinstance(result.exception, ConfigError), result.output  # exit 2 (`senpai.cli.main`)
    assert "mlp.py defines no build(**params)" in str(result.exception)
    (root / "mlp.py").write_text(MLP + BUILD)  # by hand, as the evaluator's run on the sample asked
    result = CliRunner().invoke(cli, init)  # reuses its answers, and keeps what it wrote
    assert result.exit_code == 0, result.output
    t = load_target(root)
    assert (t.train, t.metric.name, t.metric.direction) == ("python fit_mlp.py", "test_loss", "minimize")
    assert set(t.params.space) == {"learning_rate", "steps"}  # the seed, the folder and the interval left out
    assert (t.holdout.metric, t.holdout_direction) == ("holdout_log_loss", "minimize")
    # the module comes from the file the script imports, protected, beside the evaluator in the score step
    assert t.holdout.files == ["eval/evaluate.py", "mlp.py"] and t.is_protected("mlp.py")
    evaluator = (root / "eval/evaluate.py").read_text()
    assert "from safetensors.numpy import load_file" in evaluator and "skops" not in evaluator
    assert not paste_advice(root, "fit_mlp.py", FIT_MLP, "parser")
    assert not advice(answers_of(root), detect(root, t.train))
    at_the_edge(root, {"learning_rate": "low", "steps": "low"}, [0, 1])  # the loss falls with both, all over the space
    validated = CliRunner().invoke(cli, ["validate", str(root)])
    assert validated.exit_code == 0 and "printed holdout_log_loss" in validated.output, validated.output

    net = runpy.run_path(str(root / "mlp.py"))
    holdout = tmp_path / "holdout"  # sealed: outside the target
    holdout.mkdir()
    x, y = net["data"](300, 2)
    header = ",".join([*(f"f{i}" for i in range(x.shape[1])), "label"])
    np.savetxt(holdout / "holdout.csv", np.column_stack([x, y]), delimiter=",", header=header, comments="")

    config = loop(local_forge, tmp_path, root, holdout, monkeypatch)
    cfg = load_harness(config)
    exps = LedgerReader(make_forge(cfg), make_tracker(cfg)).experiments()
    proposal = next(e for e in exps if e.hypothesis and not e.hypothesis.measures_base)
    (ev,) = proposal.evidence  # one student run
    params = proposal.hypothesis.params
    model = net["MLP"](4, 8, 2, 3407)
    (x_train, y_train), (x_test, y_test) = net["data"](400, 0), net["data"](200, 1)
    for _ in range(params["steps"]):
        model.step(x_train, y_train, params["learning_rate"])
    printed = float(f"{model.loss(x_test, y_test):.4f}")  # the last line: `step N | train loss: ... | test loss: ...`
    assert ev.primary.name == "test_loss" and ev.primary.value == printed  # read from the middle of the line
    (v,) = proposal.verifications  # one verification: the safetensors weights scored on the holdout, lower is better
    assert (v.metric, v.direction) == ("holdout_log_loss", "minimize")
    assert max(v.candidate_values) < min(v.baseline_values) and v.improvement > 0
