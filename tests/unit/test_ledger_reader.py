"""The ledger reader's comment cache over the Forge fake: a thread read within SETTLE seconds of its
last change, by the forge's clock, is read again until it is settled (a change in that same second
moves no `updated_at`)."""

import time

from forge_fixtures import commit_and_push

from senpai.ledger.labels import SENPAI
from senpai.ledger.table import SETTLE, LedgerReader, Snapshot


def test_a_thread_read_in_the_second_of_its_change_is_read_again_until_it_settles(fake_forge, tmp_path, monkeypatch):
    forge, fake = fake_forge
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h1", {"x.txt": "x\n"}, start="advisor")
    pr = forge.create_pull("h1", "body", "senpai/ada/h1", "advisor", [SENPAI])
    forge.create_comment(pr.number, "first")
    bot = fake.reader()  # the bot's reading part alone
    reader = LedgerReader(bot)
    reader.experiments()
    assert reader.unsettled  # read at once: a second comment in the same second would move nothing
    calls = bot.calls
    reader.experiments()
    assert bot.calls - calls == 2  # the listing and the thread again (both conditional)
    monkeypatch.setattr(fake, "clock", lambda: time.time() + SETTLE + 1)  # the forge's clock moved on
    reader.experiments()
    assert not reader.unsettled
    calls = bot.calls
    reader.experiments()
    assert bot.calls - calls == 1  # the listing alone


def test_a_turn_finds_what_its_own_listing_found_without_listing_again(fake_forge, tmp_path):
    """`listed`: the PRs as this process last listed them, with no request once it has listed (a
    turn opening a PR per student must not pay a listing per PR); a reader started from a snapshot
    lists first, since a crashed turn may have opened a PR after the snapshot was written."""
    forge, _ = fake_forge
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h1", {"x.txt": "x\n"}, start="advisor")
    key = b"k" * 32
    saved = LedgerReader(forge, snapshot=Snapshot(tmp_path / "snap.json", key))
    saved.experiments()
    assert saved.save()
    first = forge.create_pull("h1", "body", "senpai/ada/h1", "advisor", [SENPAI])  # after the snapshot
    job = LedgerReader(forge, snapshot=Snapshot(tmp_path / "snap.json", key))
    assert job.load() and first.number not in [p.number for p in job.pulls]
    calls = forge.calls
    assert first.number in [p.number for p in job.listed()] and forge.calls - calls == 1  # listed: the snapshot is older
    commit_and_push(forge, tmp_path / "seed", "senpai/bo/h2", {"y.txt": "y\n"}, start="advisor")
    forge.create_pull("h2", "body", "senpai/bo/h2", "advisor", [SENPAI])  # the turn's own open
    calls = forge.calls
    assert [p.number for p in job.listed()] == [first.number] and forge.calls == calls  # no request
