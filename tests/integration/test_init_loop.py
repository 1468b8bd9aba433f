"""From a plain scikit-learn script to a running research loop: `senpai init --yes`, the snippets it
prints applied as written, `senpai validate`, the verifier's train and score steps with init's
evaluator, then the demo's loop (local forge, local fleet, search runtime) until an experiment has evidence."""

import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from forge_fixtures import TOKEN, run_git
from walled import walls_at

from senpai.cli.demo import write_config
from senpai.cli.main import cli
from senpai.cli.scaffold import Answers, advice, detect
from senpai.cli.seed import seed_target
from senpai.cli.ticklog import TickLog
from senpai.cli.wrapper import build_wrapper
from senpai.config.harness import load_harness
from senpai.config.target import load_target
from senpai.job.workcopy import standalone_clone
from senpai.verifier.evaluate import EvaluatorFiles, score_step, train_step

PLAIN = '''"""Logistic regression on the breast cancer data: how well does it classify the validation split?"""

import argparse

from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, default=0.01, help="inverse regularisation strength")
parser.add_argument("--max-iter", type=int, default=100)
args = parser.parse_args()

x, y = load_breast_cancer(return_X_y=True)
x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.25, random_state=0)
model = make_pipeline(StandardScaler(), LogisticRegression(C=args.C, max_iter=args.max_iter))
model.fit(x_train, y_train)
accuracy = model.score(x_val, y_val)
print(f"accuracy: {accuracy:.4f}")
'''


def apply_advice(root: Path) -> None:
    """Add to train.py exactly the snippets `senpai init` printed: params before parse_args, SEED
    near the top, the artifact at the end."""
    found = detect(root)
    answers = Answers("python train.py", "accuracy", "maximize", "params.json", "accuracy")
    params, seed, artifact = (a.snippet for a in advice(answers, found))
    text = PLAIN.replace("args = parser.parse_args()", f"{params}\nargs = parser.parse_args()")
    text = text.replace("parser = argparse.ArgumentParser()", f"{seed}\nparser = argparse.ArgumentParser()")
    (root / "train.py").write_text(f"{text}{artifact}\n")


@pytest.mark.long
def test_init_turns_a_plain_script_into_a_target_whose_loop_runs(local_forge, tmp_path, monkeypatch):
    root = tmp_path / "cancer"
    root.mkdir()
    (root / "train.py").write_text(PLAIN)
    result = CliRunner().invoke(cli, ["init", str(root), "--yes"])
    assert result.exit_code == 0, result.output
    assert result.output.count("    ") >= 3 and "needs:" in result.output  # the three snippets the script lacks
    apply_advice(root)
    assert not advice(Answers("python train.py", "accuracy", "maximize", "params.json", "accuracy"), detect(root))
    assert CliRunner().invoke(cli, ["validate", str(root)]).exit_code == 0

    holdout = tmp_path / "holdout"  # the sealed holdout, outside the target, as init's next steps say
    holdout.mkdir()
    from sklearn.datasets import load_breast_cancer  # scikit-learn (scipy: seconds) when run, not at collection

    x, y = load_breast_cancer(return_X_y=True)
    header = ",".join([*(f"f{i}" for i in range(x.shape[1])), "label"])
    np.savetxt(holdout / "holdout.csv", np.column_stack([x, y]), delimiter=",", header=header, comments="")

    config = write_config(tmp_path / "run", local_forge.base_url, 1, 1, repo="senpai/cancer", holdout=holdout)
    cfg = load_harness(config)
    monkeypatch.setenv(cfg.forge.token_env, TOKEN)
    seed_target(cfg.forge, root, tmp_path / "seed")
    assert 0.9 < verify_once(tmp_path / "seed", holdout, tmp_path / "verify") <= 1.0
    exps = run_until_evidence(config, time.monotonic() + 300)
    with_evidence = [e for e in exps if e.evidence]
    assert with_evidence, [(e.pr, e.state, e.error) for e in exps]
    primary = with_evidence[0].evidence[0].primary
    assert primary.name == "accuracy" and 0.5 < primary.value <= 1.0


def verify_once(checkout: Path, holdout: Path, work: Path) -> float:
    """The verifier's train and score steps for seed 0 on `checkout`'s head, with init's evaluator;
    return the holdout metric it prints (`holdout_accuracy`)."""
    target, sha = load_target(checkout), run_git(checkout, "rev-parse", "HEAD")
    clone = standalone_clone(checkout, sha, work / "checkout")  # as the verifier trains: never in `checkout`
    trained = train_step(target.train, clone, sha, "candidate", 0, work / "artifacts", 120, None, walls_at(work))
    assert trained.returncode == 0, trained.tail
    evaluator = EvaluatorFiles(checkout, sha, target.holdout.files)
    out, refused = score_step(target.holdout, evaluator, trained, holdout, work / "score", 120, walls_at(work))
    assert refused is None and out.returncode == 0, refused or out.output
    return out.value(target.holdout.metric)


def run_until_evidence(config: Path, deadline: float):
    """Run the wrapper (as `senpai demo` does) until an experiment has evidence or `deadline` passes."""

    def done(report) -> bool:
        return any(e.evidence for e in report.exps) or time.monotonic() > deadline

    w = build_wrapper(str(config))
    try:
        report = w.run(until=done, on_tick=TickLog(quiet=True))
        return (report or w.tick()).exps
    finally:
        for job in w.fleet.list():
            if not job.done:
                w.fleet.delete(job.name)
        w.store.close()
