"""The openhands runtime end to end, against a hostile target (issue 24), as a non-root user: the
wrapper runs advisor and student turns through the real OpenHands SDK against the scripted LLM
server, with the local forge, real git, real wandb offline, the local fleet and the verifier; the
experiment opens, trains and merges through the gate, and the ledger reads as with the search runtime.

One cycle serves both subjects (each costs a whole agent cycle, ~120 CPU-s). The target is digits
made hostile with the probe of tests/hostile_target.py: the student's terminal runs it first thing
in every turn (the advisor has no terminal: it is offered none, and its scripted tries to call one
fail), and the student's pushed change is trained (the probe again) and verified (train and score
steps probe too). No probe finds the bot's token or the LLM key, writes anything of senpai's, reads
senpai's folders, or gets anything from the forge. As in test_hostile_target, on a machine where the
tests run as root the wrapper and all its jobs run in a user namespace as uid 1000.
"""

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
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
from research import assert_no_duplicates, make_program, reader
from scripted import (
    CODE_CHANGE,
    LBFGS,
    LLM_KEY,
    LLM_KEY_ENV,
    advisor_policy,
    student_policy,
    tool_results,
    use_openhands,
    workdir,
)

from senpai.cli.main import cli
from senpai.cli.seed import EXAMPLE
from senpai.cli.wiring import make_fleet
from senpai.config.harness import load_harness
from senpai.ledger.consistency import check
from senpai.ledger.spend import spend
from senpai.ledger.table import ledger_rows, to_json

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


@pytest.mark.long
def test_cycle_merges_through_the_gate_and_the_openhands_roles_of_a_hostile_target_get_nothing(
    local_forge, llm_server, tmp_path, monkeypatch
):
    register_bot(local_forge.server, BOT)
    monkeypatch.setenv("SENPAI_DEMO_TOKEN", BOT)  # the forge token jobs inherit
    monkeypatch.setenv(LLM_KEY_ENV, LLM_KEY)
    # the probe, then the example's own train.py: the one the scripted student changes
    files = {"probe.py": PROBE_SCRIPT, "eval/evaluate.py": hostile_evaluator((EXAMPLE / "eval" / "evaluate.py").read_text())}
    probe_first = lambda t: t.update(train=f"python probe.py train && {t['train']}")  # noqa: E731
    config = make_program(local_forge.base_url, tmp_path, "ohcycle", students=1, experiments=1, mutate=probe_first, files=files)
    use_openhands(config, llm_server.base_url)
    llm_server.state.script("scripted-advisor", [probing(advisor_policy, "advisor-shell")] * 20)  # the probe call fails
    llm_server.state.script("scripted-student", [probing(student_policy, "student-shell")] * 10)
    wrapper = [sys.executable, "-m", "senpai", "wrapper", "run", "--config", str(config), "--until-decided", "1", "--quiet"]
    proc = subprocess.run(as_non_root(wrapper), env=dict(os.environ), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the wrapper stops at the decision, but the local fleet's jobs are detached: an advisor job may
    # still be posting its turn record. Read the ledger once they are all done.
    fleet, deadline = make_fleet(load_harness(config)), time.monotonic() + 120
    while not all(j.done for j in fleet.list()):
        assert time.monotonic() < deadline, [j.name for j in fleet.list() if not j.done]
        time.sleep(0.5)

    # no probe got anything
    found = probes(tmp_path / "run")
    kinds = {step_kind(p) for p in found}
    assert kinds == {"student-shell", "student train", "verifier train", "score"}, kinds
    offered = {t["function"]["name"] for r in llm_server.state.requests_for("scripted-advisor") for t in r["tools"]}
    assert "file_editor" in offered and "terminal" not in offered
    assert_got_nothing(found, senpai_folders(config, local_forge.data_dir), [BOT, LLM_KEY])

    exps = reader(config).experiments()
    assert len(exps) == 1
    e = exps[0]
    assert e.state == "merged", (e.state, e.decision)
    assert e.hypothesis.budget.wall_seconds == 120 + 300  # the student job holds training and its agent turn
    base_params = json.loads((EXAMPLE / "params.json").read_text())
    assert e.hypothesis.params == base_params and e.hypothesis.change == CODE_CHANGE  # a code-only hypothesis
    ev = e.evidence[-1]
    assert ev.outcome == "ok" and ev.runs[0].state == "finished"  # the probe did not stop the work: the change was trained
    assert ev.cost.tokens > 0 and ev.cost.dollars > 0  # the student's LLM spend is in the evidence
    # the advisor's turns that opened and decided it recorded their spend on it: the caps count them
    assert {t.status for t in e.turn_costs} == {"finished"} and len({t.key for t in e.turn_costs}) >= 2
    assert 0 < spend(exps, {}).advisor_dollars == sum(t.spent.dollars for t in e.turn_costs)
    rec = reader(config).tracker.get_run(ev.runs[0].id)
    assert rec.config["max_iter"] == 20 and rec.config["hidden_width"] == 8  # params untouched
    assert 0 < rec.summary["epochs"] <= 20 and e.runs[0].metric == ev.primary.value
    v = e.verifications[-1]
    assert v.passed and e.decision.verdict == "merge" and e.decision.reason == "the verifier passed it"
    # the merged change is code: the verifier re-trained train.py with L-BFGS and confirmed it
    forge = reader(config).forge
    assert forge.pull_files(e.pr) == ["train.py"]
    assert LBFGS in forge.read_file("train.py", "advisor")
    assert sum(x.decided for x in exps) == 1  # the wrapper stopped (--until-decided 1) at this decision
    assert check(exps, forge.branch_sha("advisor")).ok  # no merge, decision or base push senpai did not make
    assert not [c for c in forge.list_comments(e.pr) if "pwned" in c.body]

    # the ledger reads as with the search runtime: same blocks, same run identity, same CLI output
    assert e.error is None and not e.budget_reports and len(e.evidence) == 1 and len(e.decisions) == 1
    assert (
        rec.group == f"pr-{e.pr}" and rec.name == f"ada/pr-{e.pr}/1" and {"senpai", "student:ada", f"pr-{e.pr}"} <= set(rec.tags)
    )
    assert rec.config["senpai_pr"] == e.pr and rec.config["senpai_hypothesis"] == e.hypothesis.id
    cli_json = CliRunner().invoke(cli, ["ledger", "--json", "--config", str(config)])
    assert cli_json.exit_code == 0 and json.loads(cli_json.stdout) == json.loads(to_json(exps))
    row = ledger_rows(exps)[0]
    assert (row["verdict"], row["verified"], row["outcome"], row["run_state"]) == ("merge", True, "ok", "finished")
    assert_no_duplicates(config)

    requests = llm_server.state.requests
    turns = llm_server.state.per_turn()
    # reported in the README's figures, which were measured without the probe: here each turn has one
    # LLM call more (the probe's), and the student's turns carry its output too
    print("\ntokens per turn (cl100k):", *turns, sep="\n  ")
    assert len(turns) >= 4 and all(t["calls"] >= 2 and t["prompt_tokens"] > t["completion_tokens"] > 0 for t in turns)
    advisor = llm_server.state.requests_for("scripted-advisor")
    student = llm_server.state.requests_for("scripted-student")
    # each turn begins with the probe's call: the advisor's (at least 3) turns and the student's one
    assert len(advisor) >= 6 + 3 and len(student) == 6 + 1
    # the GitHub token never reaches the LLM: not in prompts, tool output (env, .git/config), headers
    assert not any(BOT in json.dumps(r) for r in requests)
    _, env_dump = (m for m in student[2]["messages"] if m["role"] == "tool")  # the probe's, then `env`'s
    assert "SENPAI_DEMO_TOKEN" not in json.dumps(env_dump) and LLM_KEY_ENV not in json.dumps(env_dump)
    assert "PATH=" in json.dumps(env_dump)  # it really is the shell's environment
    # the hooks the agent planted never ran with the harness's credentials
    work = Path(load_harness(config).fleet.dir) / f"senpai-student-pr{e.pr}-1" / "work"
    assert (work / "repo" / ".git" / "hooks" / "pre-commit").exists()
    for leak in ("hook-env.txt", "fsmonitor-env.txt"):
        assert not (work / leak).exists() or BOT not in (work / leak).read_text()
    # the LLM key travels only as the provider's auth header, never in a message
    assert not any(LLM_KEY in json.dumps(r["messages"]) for r in requests)
    # untrusted data is wrapped: terminal output, file contents, W&B text
    tool_text = json.dumps([m for r in requests for m in r["messages"] if m["role"] == "tool"])
    for source in ('<untrusted source=\\"terminal\\">', '<untrusted source=\\"file:', '<untrusted source=\\"wandb:'):
        assert source in tool_text, source
