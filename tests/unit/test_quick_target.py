"""tests/quick_target stands in for examples/digits in the e2e tests about the harness: it keeps the
digits contract, and its stdlib evaluator scores a better model higher on the sealed holdout."""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import yaml

from senpai.cli.seed import EXAMPLE
from senpai.config.target import load_target

QUICK = Path(__file__).resolve().parents[1] / "quick_target"
SAME = ("metric", "params", "holdout", "protected", "scope", "budget", "train", "program")


def test_the_quick_target_keeps_the_digits_contract():
    quick, digits = (yaml.safe_load((d / "senpai.yaml").read_text()) for d in (QUICK, EXAMPLE))
    assert {k: quick[k] for k in SAME} == {k: digits[k] for k in SAME}
    assert json.loads((QUICK / "params.json").read_text()) == json.loads((EXAMPLE / "params.json").read_text())
    assert load_target(QUICK).name == "quick-mlp"


def _score(tmp_path: Path, skill: float, seed: int = 0) -> tuple[int, dict[str, float]]:
    art, holdout = tmp_path / f"art-{uuid.uuid4().hex}", tmp_path / "holdout"
    art.mkdir()
    holdout.mkdir(exist_ok=True)
    (holdout / "holdout.csv").write_text("p0,label\n" + "".join(f"{i % 17},{i % 10}\n" for i in range(360)))
    (art / "model.json").write_text(json.dumps({"format": "quick-mlp/1", "params": {}, "seed": seed, "skill": skill}))
    cmd = [sys.executable, "-I", "-P", "eval/evaluate.py", "--artifact", str(art), "--holdout", str(holdout)]
    proc = subprocess.run(cmd, cwd=QUICK, capture_output=True, text=True, timeout=60)
    return proc.returncode, {k: float(v) for k, v in (line.split(": ") for line in proc.stdout.splitlines())}


def test_the_quick_evaluator_scores_a_better_model_higher_and_the_same_model_the_same(tmp_path):
    rc, weak = _score(tmp_path, 0.79)
    assert rc == 0 and 0.7 < weak["holdout_accuracy"] < 0.88
    _, strong = _score(tmp_path, 0.95)
    assert strong["holdout_accuracy"] > weak["holdout_accuracy"] + 0.1
    assert strong["holdout_log_loss"] < weak["holdout_log_loss"]
    assert _score(tmp_path, 0.79, seed=0)[1] != _score(tmp_path, 0.79, seed=1)[1]  # the seed draws again
    assert _score(tmp_path, 0.79) == (0, weak)  # deterministic
