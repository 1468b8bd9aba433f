"""The openhands roles against a hostile target, run as a non-root user (issue 24): the student's
terminal runs the probe of tests/hostile_target.py first thing in every turn (the advisor has no
terminal: it is offered none, and its scripted tries to call one fail), and the student's pushed
change is trained (the probe again) and verified (train and score steps probe too). No probe finds
the bot's token or the LLM key, writes anything of senpai's, reads senpai's folders, or gets
anything from the forge; the experiment is decided as any other.

The policies are the scripted ones of test_openhands_cycle, each turn preceded by the probe. As in
test_hostile_target, on a machine where the tests run as root the wrapper and all its jobs run in
a user namespace as uid 1000.
"""

import copy
import os
import subprocess
import sys

import pytest
from forge_fixtures import register_bot
from hostile_target import (
    BOT,
    PROBE_SCRIPT,
    as_non_root,
    assert_got_nothing,
    hostile_evaluator,
    probes,
    senpai_folders,
    step_kind,
)
from llm_server import call
from research import make_program, reader
from scripted import LLM_KEY, LLM_KEY_ENV, advisor_policy, student_policy, tool_results, use_openhands, workdir

from senpai.cli.seed import EXAMPLE
from senpai.ledger.consistency import check

pytestmark = pytest.mark.e2e


def probing(policy, role: str):
    """`policy`, after a first step that runs the probe in the agent's terminal. Its report goes to
    the shell's own HOME (under the job's folder, where the test finds it), not to the work copy,
    which the student commits."""

    def step(body: dict) -> dict:
        if not tool_results(body):
            log = '"$HOME/probe.log"'
            return call("terminal", command=f"cd {workdir(body)} && python probe.py {role} > {log} 2>&1; tail -c 300 {log}")
        shifted = copy.deepcopy(body)  # the policy counts its own steps' results: hide the probe's
        first = next(i for i, m in enumerate(shifted["messages"]) if m["role"] == "tool")
        del shifted["messages"][first]
        return policy(shifted)

    return step


def test_the_openhands_roles_get_nothing(local_forge, llm_server, tmp_path):
    register_bot(local_forge.server, BOT)
    # the probe, then the example's own train.py: the one the scripted student changes
    files = {"probe.py": PROBE_SCRIPT, "eval/evaluate.py": hostile_evaluator((EXAMPLE / "eval" / "evaluate.py").read_text())}
    probe_first = lambda t: t.update(train=f"python probe.py train && {t['train']}")  # noqa: E731
    config = make_program(local_forge.base_url, tmp_path, "ohvile", mutate=probe_first, files=files)
    use_openhands(config, llm_server.base_url)
    llm_server.state.script("scripted-advisor", [probing(advisor_policy, "advisor-shell")] * 20)  # the probe call fails
    llm_server.state.script("scripted-student", [probing(student_policy, "student-shell")] * 10)
    wrapper = [sys.executable, "-m", "senpai", "wrapper", "run", "--config", str(config), "--until-decided", "1", "--quiet"]
    env = {**os.environ, "SENPAI_DEMO_TOKEN": BOT, LLM_KEY_ENV: LLM_KEY}
    proc = subprocess.run(as_non_root(wrapper), env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]

    found = probes(tmp_path / "run")
    kinds = {step_kind(p) for p in found}
    assert kinds == {"student-shell", "student train", "verifier train", "score"}, kinds
    offered = {t["function"]["name"] for r in llm_server.state.requests_for("scripted-advisor") for t in r["tools"]}
    assert "file_editor" in offered and "terminal" not in offered
    assert_got_nothing(found, senpai_folders(config, local_forge.data_dir), [BOT, LLM_KEY])

    exps = reader(config).experiments()
    assert len(exps) == 1 and exps[0].decided
    assert exps[0].evidence[-1].outcome == "ok"  # the probe did not stop the work: the change was trained
    forge = reader(config).forge
    assert check(exps, forge.branch_sha("advisor")).ok
    assert not [c for c in forge.list_comments(exps[0].pr) if "pwned" in c.body]
