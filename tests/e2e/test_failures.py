"""What goes wrong, end to end: crashes, NaN, protected paths, human-broken blocks, a killed wrapper."""

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from forge_fixtures import clone, commit_and_push
from research import assert_no_duplicates, make_program, reader, run

from senpai.cli.wiring import make_forge
from senpai.config.harness import load_harness
from senpai.ledger import transitions
from senpai.ledger.blocks import BaselineRef, BudgetRef, Hypothesis, MetricRef
from senpai.ledger.labels import ExperimentState

pytestmark = pytest.mark.e2e

NAN_TRAIN = """import wandb
run = wandb.init()
run.log({"val_accuracy": float("nan")})
run.finish()
print("val_accuracy: nan")
"""
# Logs a good metric, then its run crashes; the train command still exits 0.
CRASHED_RUN = """import os, signal, sys, wandb
run = wandb.init()
run.log({"val_accuracy": 0.99})
if sys.argv[1] == "finish":
    run.finish(exit_code=1)
else:
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize(
    "case, train, files, expected",
    [
        ("crash", "python -c \"import sys; print('boom: out of memory'); sys.exit(3)\"", {}, "exited with status 3"),
        ("nan", "python nan_train.py", {"nan_train.py": NAN_TRAIN}, "val_accuracy is nan (not finite)"),
        ("crashed-run", "python crashed.py finish; true", {"crashed.py": CRASHED_RUN}, "ended crashed, not finished"),
        ("killed-run", "python crashed.py kill; true", {"crashed.py": CRASHED_RUN}, "not finished"),
    ],
)
def test_failed_training_is_closed_as_a_useful_failure(local_forge, tmp_path, case, train, files, expected):
    config = make_program(local_forge.base_url, tmp_path, f"fail-{case}", mutate=lambda t: t.update(train=train), files=files)
    run(config, decided=1, timeout=120)
    (exp,) = reader(config).experiments()
    assert exp.state == "closed" and exp.decision.verdict == "close"
    assert expected in exp.evidence[-1].failure and expected in exp.decision.reason
    # the one experiment is the measured start: a base that fails so is blocked, not a useful failure (issue 27)
    assert exp.hypothesis.measures_base and exp.decision.reason.startswith("the base does not train")
    assert exp.verifications == []  # a failure never reaches the verifier
    if case == "crash":
        assert "boom: out of memory" in exp.evidence[-1].log_tail
        job_log = (Path(load_harness(config).fleet.dir) / f"senpai-student-pr{exp.pr}-1" / "log").read_text()
        assert "the train command exited 3" in job_log and "boom: out of memory" in job_log  # `senpai logs` says why
    elif case.endswith("-run"):
        assert exp.evidence[-1].outcome == "failed" and exp.evidence[-1].runs[0].state != "finished"
    else:
        assert exp.runs[-1].state == "finished" and math.isnan(exp.runs[-1].metric)  # NaN read back from W&B


def _hypothesis(student: str, hid: str, params: dict, base: str) -> Hypothesis:
    return Hypothesis(
        id=hid,
        hypothesis="hand-made",
        rationale="test",
        plan="train",
        params=params,
        metric=MetricRef(name="val_accuracy", direction="maximize"),
        baseline=BaselineRef(commit=base, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=120, attempts=2),
        stop_condition="2 attempts",
        student=student,
    )


GOOD = {
    "hidden_layers": 2,
    "hidden_width": 64,
    "activation": "tanh",
    "alpha": 1e-4,
    "learning_rate_init": 0.003,
    "batch_size": 64,
    "max_iter": 40,
}


def test_protected_diff_is_refused_and_a_corrupted_block_blocks_only_its_pr(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "guard", students=2, experiments=2, target="quick")
    forge = make_forge(load_harness(config))
    base = forge.branch_sha("advisor")
    work = clone(forge, tmp_path / "student-work", "advisor")
    # a "student" who also edits the evaluator, plus a real improvement
    tampered = (work / "eval" / "evaluate.py").read_text() + "\n# tuned the evaluator\n"
    commit_and_push(forge, work, "senpai/ada/h-tamper", {"eval/evaluate.py": tampered}, start="advisor")
    commit_and_push(forge, work, "senpai/bo/h-victim", {"notes.md": "plan\n"}, start="advisor")
    pr_a = transitions.open_experiment(
        forge, _hypothesis("ada", "h-tamper", GOOD, base), "senpai/ada/h-tamper", "advisor", "tamper"
    )
    pr_b = transitions.open_experiment(
        forge, _hypothesis("bo", "h-victim", GOOD, base), "senpai/bo/h-victim", "advisor", "victim"
    )
    broken = pr_b.body.replace("student: bo", "student: [bo")  # a human edit that breaks the YAML
    forge.update_pull(pr_b.number, body=broken)

    run(config, decided=1, timeout=180)
    led = reader(config)
    a = led.experiment(forge.get_pull(pr_a.number))
    assert a.state == "closed" and "protected" in a.decision.reason
    assert a.verifications[-1].protected_touched == ["eval/evaluate.py"] and not a.verifications[-1].passed
    assert a.evidence[-1].outcome == "ok"  # the training itself was fine; the gate refused it

    b_pr = forge.get_pull(pr_b.number)
    assert ExperimentState.BLOCKED.label in b_pr.labels and b_pr.state == "open" and b_pr.body == broken
    comments = [c.body for c in forge.list_comments(pr_b.number)]
    assert len(comments) == 1 and "not valid YAML" in comments[0]
    assert_no_duplicates(config)


def _wrapper(config, env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "senpai", "wrapper", "run", "--config", str(config), "--until-decided", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


@pytest.mark.long
def test_wrapper_killed_mid_tick_restarts_without_duplicates(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "restart", students=2, experiments=2, target="quick")
    env = {**os.environ, "WANDB_MODE": "offline"}
    kills = 0
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        proc = _wrapper(config, env)
        if kills < 4:
            # let it get into a tick that launches or reaps, then kill it without warning
            for line in proc.stdout:
                if line.startswith("    "):
                    break
            time.sleep(0.05 * kills)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            continue
        out, _ = proc.communicate(timeout=max(1, deadline - time.monotonic()))
        assert proc.returncode == 0, out
        break
    assert kills == 4
    exps = reader(config).experiments()
    assert sum(e.decided for e in exps) >= 2 and len(exps) == 2
    assert_no_duplicates(config)
    jobs = sorted(p.name for p in (tmp_path / "run" / "jobs").iterdir() if not p.name.startswith("."))
    assert len([j for j in jobs if j.startswith("senpai-student-")]) == len({j for j in jobs if j.startswith("senpai-student-")})


def test_sigterm_stops_cleanly(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "sigterm", students=1, experiments=1, target="quick")
    proc = _wrapper(config, {**os.environ, "WANDB_MODE": "offline"})
    for line in proc.stdout:
        if "tick 1" in line:
            break
    proc.send_signal(signal.SIGTERM)
    # the wrapper finishes its current tick first; communicate() keeps draining its output meanwhile
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0, out[-2000:]
