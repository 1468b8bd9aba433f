"""The openhands runtime end to end: the wrapper runs advisor and student turns through the real
OpenHands SDK against the scripted LLM server, with the local forge, real git, real wandb offline,
the local fleet and the verifier; the ledger reads as with the search runtime."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from forge_fixtures import register_bot
from research import assert_no_duplicates, make_program, reader, run
from scripted import CODE_CHANGE, LBFGS, LLM_KEY, LLM_KEY_ENV, advisor_policy, student_policy, use_openhands

from senpai.cli.main import cli
from senpai.cli.seed import EXAMPLE
from senpai.config.harness import load_harness
from senpai.ledger.spend import spend
from senpai.ledger.table import ledger_rows, to_json

pytestmark = pytest.mark.e2e
FORGE_TOKEN = "senpai:ghp-fake-forge-token-7f3a9c2e51"


def test_cycle_opens_trains_and_merges_through_the_gate(local_forge, llm_server, tmp_path, monkeypatch):
    register_bot(local_forge.server, FORGE_TOKEN)
    monkeypatch.setenv("SENPAI_DEMO_TOKEN", FORGE_TOKEN)  # the forge token jobs inherit
    monkeypatch.setenv(LLM_KEY_ENV, LLM_KEY)
    config = make_program(local_forge.base_url, tmp_path, "ohcycle", students=1, experiments=1)
    use_openhands(config, llm_server.base_url)
    llm_server.state.script("scripted-advisor", [advisor_policy] * 20)
    llm_server.state.script("scripted-student", [student_policy] * 10)

    report = run(config, decided=1, timeout=300)

    exps = reader(config).experiments()
    assert len(exps) == 1
    e = exps[0]
    assert e.state == "merged", (e.state, e.decision)
    assert e.hypothesis.budget.wall_seconds == 120 + 300  # the student job holds training and its agent turn
    base_params = json.loads((EXAMPLE / "params.json").read_text())
    assert e.hypothesis.params == base_params and e.hypothesis.change == CODE_CHANGE  # a code-only hypothesis
    ev = e.evidence[-1]
    assert ev.outcome == "ok" and ev.runs[0].state == "finished"
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
    assert report.decided == 1

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
    print("\ntokens per turn (cl100k):", *turns, sep="\n  ")  # reported in the README's figures
    assert len(turns) >= 4 and all(t["calls"] >= 2 and t["prompt_tokens"] > t["completion_tokens"] > 0 for t in turns)
    advisor = llm_server.state.requests_for("scripted-advisor")
    student = llm_server.state.requests_for("scripted-student")
    assert len(advisor) >= 6 and len(student) == 6
    # the GitHub token never reaches the LLM: not in prompts, tool output (env, .git/config), headers
    secret = FORGE_TOKEN.split(":", 1)[1]
    assert not any(secret in json.dumps(r) for r in requests)
    env_dump = next(m for m in student[1]["messages"] if m["role"] == "tool")
    assert "SENPAI_DEMO_TOKEN" not in json.dumps(env_dump) and LLM_KEY_ENV not in json.dumps(env_dump)
    assert "PATH=" in json.dumps(env_dump)  # it really is the shell's environment
    # the hooks the agent planted never ran with the harness's credentials
    work = Path(load_harness(config).fleet.dir) / f"senpai-student-pr{e.pr}-1" / "work"
    assert (work / "repo" / ".git" / "hooks" / "pre-commit").exists()
    for leak in ("hook-env.txt", "fsmonitor-env.txt"):
        assert not (work / leak).exists() or secret not in (work / leak).read_text()
    # the LLM key travels only as the provider's auth header, never in a message
    assert not any(LLM_KEY in json.dumps(r["messages"]) for r in requests)
    # untrusted data is wrapped: terminal output, file contents, W&B text
    tool_text = json.dumps([m for r in requests for m in r["messages"] if m["role"] == "tool"])
    for source in ('<untrusted source=\\"terminal\\">', '<untrusted source=\\"file:', '<untrusted source=\\"wandb:'):
        assert source in tool_text, source
