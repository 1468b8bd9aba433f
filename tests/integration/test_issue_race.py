"""Two wrapper processes of one installation overlap for a tick (one restarted, the other finishing
its tick before its lease check stops it): both may escalate the same failure at once. Over the real
local forge, humans get one issue for it."""

import threading

from forge_fixtures import TOKEN

from senpai.forge.github import GitHubForge
from senpai.ledger.escalation import escalated, escalation_id, open_issue
from senpai.ledger.labels import ATTENTION, SENPAI


class _Overlapping(GitHubForge):
    """The bot's adapter in one of two processes: its first issue listing returns only once the other
    process has listed too, so both list before either opens (the race, made certain)."""

    def __init__(self, settings, barrier: threading.Barrier) -> None:
        super().__init__(settings, TOKEN)
        self.barrier, self.listed = barrier, False

    def list_issues(self, label, state="open"):
        issues = super().list_issues(label, state)
        if not self.listed:
            self.listed = True
            self.barrier.wait(timeout=30)
        return issues


def test_two_processes_escalating_the_same_key_at_once_leave_humans_one_open_issue(forge_repo):
    direct, settings = forge_repo
    barrier = threading.Barrier(2)
    key, numbers = "senpai-advisor-no-effect:openai/m", []

    def escalate(forge: GitHubForge) -> None:
        numbers.append(open_issue(forge, key, "senpai: the advisor's model calls no tools (no PR)", "look"))

    racers = [threading.Thread(target=escalate, args=(_Overlapping(settings, barrier),)) for _ in range(2)]
    for t in racers:
        t.start()
    for t in racers:
        t.join(60)

    both = [i for i in direct.list_issues(SENPAI, "all") if escalation_id(key) in escalated([i], direct.login)]
    assert len(both) == 2  # the race happened: each process opened one
    (kept,) = [i for i in both if i.state == "open"]
    assert numbers == [kept.number, kept.number] and ATTENTION in kept.labels
    assert open_issue(direct, key, "again", "look") == kept.number  # a later escalation finds the open one
