"""Third-party scripts `senpai init` has never seen, from the script to a first verified experiment
(issue 27, "Done when"): `senpai init --yes`, the snippets it prints pasted in as written,
`senpai validate`, then the demo's loop (local forge, local fleet, search runtime) until the
measured start and one proposal are decided: one student run of the proposal, one verification.

Each script's base params sit at the worst end of its search space (the test moves them there
after init), so every proposal beats the base on validation and goes to the verifier."""

import json
import textwrap
import time
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from forge_fixtures import TOKEN
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

from senpai.cli.demo import run_until, seed_target, write_config
from senpai.cli.main import cli
from senpai.cli.scaffold import Answers, advice, detect
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config import safe_yaml
from senpai.config.harness import load_harness
from senpai.config.target import load_target
from senpai.ledger.table import LedgerReader

TRAIN_ROWS = 354  # of diabetes' 442: the script trains and validates on these; the sealed holdout is the rest

# Ridge regression whose metric, the validation MSE as a loss, is printed as one JSON line among others.
RIDGE_JSON = f'''"""Ridge regression on the diabetes data."""
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
    x_train, x_val, y_train, y_val = train_test_split(x[:{TRAIN_ROWS}], y[:{TRAIN_ROWS}], random_state=args.random_state)
    print("fitting ridge, alpha", args.alpha)
    model = Ridge(alpha=args.alpha).fit(x_train, y_train)
    metrics = {{"val_loss": float(mean_squared_error(y_val, model.predict(x_val))), "n_train": len(x_train)}}
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
'''


def paste_advice(root: Path, script: str, text: str) -> None:
    """Write `script` as `text` with exactly the snippets `senpai init` printed for it: the params
    before parse_args, SEED and the artifact at the end of main()."""
    params, seed, artifact = (a.snippet for a in advice(answers_of(root), detect(root, load_target(root).train)))
    indent = lambda s: textwrap.indent(s, "    ")  # noqa: E731  (main()'s body)
    text = text.replace("    args = p.parse_args()\n", f"{indent(params.replace('parser.', 'p.'))}\n    args = p.parse_args()\n")
    text = text.replace("\n\nif __name__", f"{indent(seed)}\n{indent(artifact)}\n\n\nif __name__")
    (root / script).write_text(text)


def answers_of(root: Path) -> Answers:
    """The answers init wrote into `root`'s senpai.yaml."""
    t = load_target(root)
    return Answers(t.train, t.metric.name, t.metric.direction, t.params.file, t.holdout.metric.removeprefix("holdout_"))


def at_the_edge(root: Path, key: str, end: str, seeds: list[int]) -> None:
    """Move params `key` to the `end` ("low"/"high") of its search space, and verify on `seeds`."""
    target = load_target(root)
    edge = getattr(target.params.space[key], end)
    path = root / target.params.file
    path.write_text(json.dumps({**json.loads(path.read_text()), key: edge}))
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


def test_a_scikit_learn_script_printing_its_loss_as_json_reaches_a_verified_experiment(local_forge, tmp_path, monkeypatch):
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
    paste_advice(root, "fit_ridge.py", RIDGE_JSON)
    assert not advice(answers_of(root), detect(root, t.train))  # the script fits the contract now
    at_the_edge(root, "alpha", "high", [0, 1])  # the MSE grows with alpha over the whole space
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
