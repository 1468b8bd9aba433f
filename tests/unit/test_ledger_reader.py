"""The ledger reader's comment cache over the Forge fake: a thread read within SETTLE seconds of its
last change, by the forge's clock, is read again until it is settled (a change in that same second
moves no `updated_at`)."""

import time

from forge_fixtures import commit_and_push

from senpai.ledger.labels import SENPAI
from senpai.ledger.table import SETTLE, LedgerReader


def test_a_thread_read_in_the_second_of_its_change_is_read_again_until_it_settles(fake_forge, tmp_path, monkeypatch):
    forge, fake = fake_forge
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h1", {"x.txt": "x\n"}, start="advisor")
    pr = forge.create_pull("h1", "body", "senpai/ada/h1", "advisor", [SENPAI])
    forge.create_comment(pr.number, "first")
    reader = LedgerReader(forge)
    reader.experiments()
    assert reader.unsettled  # read at once: a second comment in the same second would move nothing
    calls = forge.calls
    reader.experiments()
    assert forge.calls - calls == 2  # the listing and the thread again (both conditional)
    monkeypatch.setattr(fake, "clock", lambda: time.time() + SETTLE + 1)  # the forge's clock moved on
    reader.experiments()
    assert not reader.unsettled
    calls = forge.calls
    reader.experiments()
    assert forge.calls - calls == 1  # the listing alone
