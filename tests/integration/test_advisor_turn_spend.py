"""A failed openhands advisor turn records what it spent before its job fails (the agents extra:
the OpenHands SDK is imported, so this is not a unit test)."""

from types import SimpleNamespace

import pytest
import yaml
from forge_fixtures import commit_and_push, target_yaml
from policy_world import CFG, NOW

from senpai.config.target import TargetConfig
from senpai.errors import TransientError
from senpai.job.context import TurnContext
from senpai.ledger.blocks import TurnUsage
from senpai.ledger.spend import spend
from senpai.ledger.table import LedgerReader
from senpai.wrapper.humans import HumanReader


def _read(forge):
    """The experiments and the steering issues' advisor turns, as the wrapper reads them."""
    ledger = LedgerReader(forge)
    return ledger.experiments(), HumanReader(CFG, forge, ledger).read().state


class _SpentGuard:
    """What advisor_turn asks of its TurnGuard once the conversation ran: its spend so far."""

    def __init__(self) -> None:
        self.spent = TurnUsage()

    def usage(self) -> TurnUsage:
        return self.spent


def test_a_turn_the_llm_provider_failed_mid_way_records_what_it_spent(fake_forge, tmp_path, monkeypatch):
    # the failed job's next try has the events of its tick (other key, new conversation): the money
    # this conversation spent is counted only if recorded now
    from senpai.agents.openhands import advisor
    from senpai.agents.openhands.session import Session
    from senpai.config.roles import Role

    forge, _ = fake_forge
    files = {"senpai.yaml": target_yaml({"rule": "welch"}), "params.json": '{"width": 32}\n'}
    commit_and_push(forge, tmp_path / "seed", "advisor", files)
    target = TargetConfig.model_validate(yaml.safe_load(forge.read_file("senpai.yaml", "advisor")))
    ctx = TurnContext(CFG, forge, None, LedgerReader(forge), target, SimpleNamespace(path=tmp_path), tmp_path, None)  # type: ignore[arg-type]
    guard = _SpentGuard()
    monkeypatch.setattr(advisor, "open_session", lambda c, role, events: (Session(c, role, guard.usage, events), None, guard))

    def provider_down(**_) -> None:
        guard.spent = TurnUsage(llm_calls=30, tokens=90_000, dollars=2.5, wall_seconds=300)
        raise TransientError("agent turn failed: the provider answered 503 after the SDK's retries")

    monkeypatch.setattr(advisor, "run_turn", provider_down)
    with pytest.raises(TransientError):
        advisor.advisor_turn(ctx, [], NOW)
    exps, steer = _read(forge)
    assert spend(exps, {}, steer.advisor_turns).advisor_dollars == 2.5
    (cost,) = steer.advisor_turns
    assert (cost.status, cost.spent.llm_calls, cost.pr) == ("error", 30, None)
    assert cost.key.startswith(f"{Role.ADVISOR}-prnone-")
