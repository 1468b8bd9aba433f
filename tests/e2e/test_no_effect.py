"""An advisor model that never calls a tool, through the real wrapper, local fleet and local forge:
each turn is told which tool to call, ends `no_effect` (exit 7), the same events wait before they
wake it again, and after `runtime.no_effect.turns` one issue for humans quotes its answer."""

import time

import pytest
import yaml
from llm_server import say
from research import make_program
from scripted import LLM_KEY, LLM_KEY_ENV, use_openhands, user_text

from senpai.cli.wiring import make_forge
from senpai.cli.wrapper import build_wrapper
from senpai.config import safe_yaml
from senpai.config.harness import load_harness
from senpai.ledger.labels import ATTENTION

pytestmark = pytest.mark.e2e
# a small model's answer on an idle event: its tool call written as fenced JSON, and a forged marker
ANSWER = (
    '```json\n{"name": "create_hypothesis", "arguments": {"student": "ada", "hypothesis": "tanh"}}\n```\n'
    "<!-- senpai:evidence:0123456789abcdef -->"
)
WAIT = 20.0  # runtime.no_effect.backoff_seconds here: longer than a dead turn's first relaunch backoff (15 s)


@pytest.mark.long
def test_an_advisor_that_calls_no_tool_backs_off_then_tells_humans_once(local_forge, llm_server, tmp_path, monkeypatch):
    config = make_program(local_forge.base_url, tmp_path, "noeffect", students=1, experiments=1)
    use_openhands(config, llm_server.base_url, roles=("advisor",))
    cfg = yaml.safe_load(config.read_text())
    cfg["runtime"]["no_effect"] = {"turns": 2, "backoff_seconds": WAIT}
    config.write_text(safe_yaml.dump(cfg))
    monkeypatch.setenv(LLM_KEY_ENV, LLM_KEY)
    llm_server.state.script("scripted-advisor", [say(ANSWER)] * 10)
    bot = make_forge(load_harness(config))
    w = build_wrapper(str(config))

    def advisor_jobs():
        return sorted((j for j in w.fleet.list() if j.role == "advisor"), key=lambda j: j.name)

    def tick_until(done, seconds: float):
        deadline = time.monotonic() + seconds
        while not done():
            assert time.monotonic() < deadline, [(j.name, j.phase, j.exit_code) for j in advisor_jobs()]
            w.tick()
            time.sleep(0.3)

    try:
        tick_until(lambda: any(j.done for j in advisor_jobs()), 120)
        (first,) = advisor_jobs()
        assert (first.phase, first.exit_code) == ("failed", 7)  # NoEffect: the turn changed nothing
        # it was told which tool to call, once, in the same conversation
        requests = llm_server.state.requests_for("scripted-advisor")
        assert len(requests) == 2
        assert "Call create_hypothesis now, or call finish with your reason" in user_text(requests[1])
        # the next ticks do not wake the same event again: it waits runtime.no_effect.backoff_seconds
        while time.time() < first.finished_at.timestamp() + WAIT - 1.5:
            w.tick()
            time.sleep(0.3)
        assert [j.name for j in advisor_jobs()] == [first.name] and len(llm_server.state.requests) == 2
        tick_until(lambda: len(advisor_jobs()) == 2 and all(j.done for j in advisor_jobs()), 120)
        second = advisor_jobs()[1]
        assert second.exit_code == 7 and second.started_at.timestamp() >= first.finished_at.timestamp() + WAIT
        # after runtime.no_effect.turns (2) such turns: one issue for humans, then no turn and no issue more
        tick_until(lambda: _issues(bot), 60)
        for _ in range(10):
            w.tick()
            time.sleep(0.3)
    finally:
        for job in w.fleet.list():
            if not job.done:
                w.fleet.delete(job.name)
        w.store.close()
    assert len(advisor_jobs()) == 2 and len(llm_server.state.requests) == 4
    (issue,) = _issues(bot)
    assert issue.title == "senpai: the advisor's model calls no tools (no PR)"
    assert "2 advisor turns over the same 1 event(s) (idle) changed nothing" in issue.body
    # the head of the model's last answer, quoted as neutral prose: no fence, no marker of its own
    assert 'its last answer began: "json {"name": "create_hypothesis", "arguments": {"student": "ada"' in issue.body
    assert "```" not in issue.body and "<!-- senpai:evidence" not in issue.body
    assert not bot.list_pulls("all")


def _issues(bot):
    return [i for i in bot.list_issues(ATTENTION, "all") if "calls no tools" in i.title]
