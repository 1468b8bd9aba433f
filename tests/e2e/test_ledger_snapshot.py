"""The ledger is re-read at the cost of what changed, and the wrapper's cache carries to its jobs.

Every request goes through `tests/fault_proxy.py` (no faults) to a real local forge, which counts
the answers by status: a 304 is free on GitHub, anything else is charged to the rate limit.
"""

import os
import time

import pytest
from fault_proxy import FaultProxy
from forge_fixtures import TOKEN, commit_and_push

from senpai.cli.wiring import forge_from
from senpai.errors import NotFound
from senpai.forge.github import GitHubForge
from senpai.ledger.labels import SENPAI
from senpai.ledger.table import SETTLE, LedgerReader, Snapshot

PRS = 5


@pytest.fixture
def ledger(forge_repo, local_forge, tmp_path):
    """(the bot's forge, a maker of the same through a counting proxy, the proxy) over PRS senpai PRs
    with a comment each."""
    forge, settings = forge_repo
    for i in range(PRS):
        commit_and_push(forge, tmp_path / "seed", f"senpai/ada/h-{i}", {f"h{i}.md": "plan\n"}, start="advisor")
        pr = forge.create_pull(f"h-{i}", "a hypothesis", f"senpai/ada/h-{i}", "advisor", [SENPAI])
        forge.create_comment(pr.number, f"note {i}")
    with FaultProxy(local_forge.base_url, rate=0.0) as proxy:

        def fresh() -> GitHubForge:
            """The forge through the proxy, as a new process has it (nothing cached)."""
            proxied = GitHubForge(settings.model_copy(update={"base_url": proxy.url}), TOKEN)
            assert proxied.login  # GET /user, once per process: not part of what is counted below
            return proxied

        time.sleep(SETTLE + 1)  # listings made now are settled (stamps are whole seconds): their ETags and comments are kept
        yield forge, fresh, proxy


def counted(proxy: FaultProxy, fn) -> tuple[object, dict[int, int]]:
    """fn()'s result and the forge's REST answers meanwhile, by status."""
    before = dict(proxy.answered)
    out = fn()
    after = {s: n - before.get(("rest", s), 0) for (surface, s), n in proxy.answered.items() if surface == "rest"}
    return out, {s: n for s, n in after.items() if n}


def test_an_unchanged_ledger_costs_one_304_and_a_change_costs_what_changed(ledger):
    forge, fresh, proxy = ledger
    reader = LedgerReader(fresh())
    first, answers = counted(proxy, reader.experiments)
    assert len(first) == PRS and answers == {200: 1 + PRS}  # one page of PRs, then each PR's comments
    again, answers = counted(proxy, reader.experiments)
    assert again == first and answers == {304: 1}
    number = first[2].pr
    forge.create_comment(number, "a new note")
    changed, answers = counted(proxy, reader.experiments)
    assert answers == {200: 2}  # the PRs updated since the last listing, and the one PR's comments
    # within SETTLE of that change its comments are asked for again, conditionally: both are free
    assert counted(proxy, reader.experiments) == (changed, {304: 2})
    assert [e.pr for e in changed] == [e.pr for e in first]
    assert [c.body for c in reader.comments(next(p for p in reader.pulls if p.number == number))][-1] == "a new note"


def test_a_job_starts_from_the_wrappers_snapshot_and_a_forged_one_is_refused(ledger, local_forge, tmp_path):
    forge, fresh, proxy = ledger
    scope = f"{local_forge.base_url} {forge.settings.repo}"
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, scope)
    wrapper = LedgerReader(fresh(), snapshot=snap)
    expected = wrapper.experiments()
    assert wrapper.save() and not wrapper.save()  # nothing read since: nothing written
    job = LedgerReader(fresh(), snapshot=snap)
    assert job.load()
    exps, answers = counted(proxy, job.experiments)
    assert exps == expected and answers == {304: 1}

    text = snap.path.read_text()
    snap.path.write_text(text.replace("note 1", "note 9"))  # what code without the token could do
    forged = LedgerReader(fresh(), snapshot=snap)
    assert not forged.load()
    exps, answers = counted(proxy, forged.experiments)
    assert exps == expected and answers == {200: 1 + PRS}  # it read the forge instead
    snap.path.write_text(text)
    assert not LedgerReader(fresh(), snapshot=Snapshot.of(str(tmp_path / "state"), "another-token", scope)).load()
    assert not LedgerReader(fresh(), snapshot=Snapshot.of(str(tmp_path / "state"), TOKEN, scope + "-other")).load()
    assert Snapshot.of(str(tmp_path), None, scope) is None  # no token, no snapshot


def test_a_job_from_the_snapshot_does_not_ask_who_it_is_and_reads_the_base_conditionally(ledger, local_forge, tmp_path):
    forge, fresh, proxy = ledger
    scope = f"{local_forge.base_url} {forge.settings.repo}"
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, scope)
    wrapper = LedgerReader(fresh(), snapshot=snap)
    sha, url = wrapper.forge.branch_sha("advisor"), wrapper.forge.clone_url
    wrapper.experiments()
    assert wrapper.save()
    settings = forge.settings.model_copy(update={"base_url": proxy.url})
    job = LedgerReader(GitHubForge(settings, TOKEN), snapshot=snap)
    assert job.load()
    asked = lambda: (job.forge.login, job.forge.clone_url, job.forge.branch_sha("advisor"))  # noqa: E731
    assert counted(proxy, asked) == ((forge.login, url, sha), {304: 1})  # no GET /user, no GET /repos
    # a snapshot is not a second source of truth: a moved base is read as such
    moved = commit_and_push(forge, tmp_path / "seed", "advisor", {"y.md": "y\n"}, start="advisor")
    assert counted(proxy, lambda: job.forge.branch_sha("advisor")) == (moved, {200: 1})


def test_a_job_from_the_snapshot_rereads_an_open_pulls_comments_conditionally(ledger, local_forge, tmp_path):
    """What a transition reads before it posts (the bot's comments, for idempotency) costs a 304
    when the thread is as the wrapper last read it, and is read whole once it is not."""
    forge, fresh, proxy = ledger
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, f"{local_forge.base_url} {forge.settings.repo}")
    wrapper = LedgerReader(fresh(), snapshot=snap)
    wrapper.experiments()
    forge.update_pull(PRS, state="closed")  # a closed PR's thread is not carried: jobs do not write there
    wrapper.experiments()
    assert wrapper.save()
    job = LedgerReader(GitHubForge(forge.settings.model_copy(update={"base_url": proxy.url}), TOKEN), snapshot=snap)
    assert job.load()
    comments, answers = counted(proxy, lambda: job.forge.list_comments(1))
    assert [c.body for c in comments] == ["note 0"] and answers == {304: 1}
    assert counted(proxy, lambda: job.forge.list_comments(PRS))[1] == {200: 1}
    forge.create_comment(1, "news")
    comments, answers = counted(proxy, lambda: job.forge.list_comments(1))
    assert [c.body for c in comments] == ["note 0", "news"] and answers == {200: 1}


def test_a_job_reads_the_pull_its_event_names_from_the_snapshot_while_it_is_current(ledger, local_forge, tmp_path):
    """`LedgerReader.pull`: a 304 while nothing changed since the wrapper's listing; once a PR
    changed, the listing of what changed (one request) shows its new state, not the snapshot's."""
    forge, fresh, proxy = ledger
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, f"{local_forge.base_url} {forge.settings.repo}")
    wrapper = LedgerReader(fresh(), snapshot=snap)
    wrapper.experiments()
    assert wrapper.save()
    job = LedgerReader(fresh(), snapshot=snap)
    assert job.load()
    pr, answers = counted(proxy, lambda: job.pull(2))
    assert answers == {304: 1}
    assert pr.model_dump(exclude={"html_url"}) == forge.get_pull(2).model_dump(exclude={"html_url"})  # (via the proxy)
    forge.set_labels(2, [SENPAI, "status:review"])
    pr, answers = counted(proxy, lambda: job.pull(2))
    assert pr.labels == [SENPAI, "status:review"] and answers == {200: 1}


def test_a_job_reads_the_pull_it_was_handed_from_the_snapshot_at_no_cost(ledger, local_forge, tmp_path):
    """`LedgerReader.handed`: the PR as the wrapper saw it when it launched the job, with no request
    even after the PR moved on (a job must not pay a listing for every other job's write); a PR
    the snapshot does not hold is listed, and one the forge does not have raises NotFound."""
    forge, fresh, proxy = ledger
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, f"{local_forge.base_url} {forge.settings.repo}")
    wrapper = LedgerReader(fresh(), snapshot=snap)
    wrapper.experiments()
    assert wrapper.save()
    handed = forge.get_pull(2)
    forge.set_labels(2, [SENPAI, "status:review"])
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h-late", {"late.md": "late\n"}, start="advisor")
    late = forge.create_pull("h-late", "a hypothesis", "senpai/ada/h-late", "advisor", [SENPAI])
    job = LedgerReader(fresh(), snapshot=snap)
    assert job.load()
    pr, answers = counted(proxy, lambda: job.handed(2))
    assert answers == {} and pr.labels == handed.labels and pr.head_sha == handed.head_sha
    comments, answers = counted(proxy, lambda: job.comments(pr))
    assert answers == {} and [c.body for c in comments] == ["note 1"]
    pr, answers = counted(proxy, lambda: job.handed(late.number))
    assert pr.head_sha == late.head_sha and answers == {200: 1}
    with pytest.raises(NotFound):
        job.handed(999)


def test_the_base_branch_and_a_label_listing_are_conditional(ledger, tmp_path):
    forge, fresh, proxy = ledger
    proxied = fresh()
    forge.create_issue("steer", "/senpai pause", ["senpai:steer"])
    sha, answers = counted(proxy, lambda: proxied.branch_sha("advisor"))
    assert answers == {200: 1}
    assert counted(proxy, lambda: proxied.branch_sha("advisor")) == (sha, {304: 1})
    issues, _ = counted(proxy, lambda: proxied.list_issues("senpai:steer", "all"))
    assert [i.title for i in issues] == ["steer"]
    assert counted(proxy, lambda: proxied.list_issues("senpai:steer", "all")) == (issues, {304: 1})
    moved = commit_and_push(forge, tmp_path / "seed", "advisor", {"x.md": "x\n"}, start="advisor")
    assert counted(proxy, lambda: proxied.branch_sha("advisor")) == (moved, {200: 1})


def test_each_role_names_itself_to_the_forge(ledger, monkeypatch):
    """Requests carry `User-Agent: senpai/<version> (<role>)`: the forge's logs (and the requests
    bench) tell the wrapper's requests from each job's."""
    forge, _, proxy = ledger
    settings = forge.settings.model_copy(update={"base_url": proxy.url})
    monkeypatch.setenv(settings.token_env, TOKEN)
    for role in ("wrapper", "student"):
        forge_from(settings, role).get_pull(1)
    routes = {(role, route) for (role, route) in proxy.charged_by_role if route.endswith("/pulls/N")}
    assert routes == {("wrapper", f"GET /repos/{settings.repo}/pulls/N"), ("student", f"GET /repos/{settings.repo}/pulls/N")}


def test_a_planted_snapshot_file_is_ignored_without_blocking_or_crashing(ledger, local_forge, tmp_path):
    """Student code can write state_dir (the local fleet's user, Kubernetes' shared volume) but not
    sign: whatever it puts at the snapshot's path, a job or a restarted wrapper reads the forge."""
    forge, fresh, _ = ledger
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, f"{local_forge.base_url} {forge.settings.repo}")
    snap.path.parent.mkdir(parents=True)
    plants = {
        "a non-ASCII HMAC line": lambda p: p.write_bytes(b"\xc3\xa9\n{}"),  # compare_digest raised TypeError on str
        "not UTF-8 at all": lambda p: p.write_bytes(b"\xff\xfe\n\xff"),
        "a FIFO": os.mkfifo,  # opening it to read waited for a writer for ever
        "a link to /dev/zero": lambda p: p.symlink_to("/dev/zero"),  # size 0, endless to read
        "a folder": lambda p: p.mkdir(),
    }
    for what, plant in plants.items():
        plant(snap.path)
        assert not LedgerReader(fresh(), snapshot=snap).load(), what
        snap.path.rmdir() if snap.path.is_dir() and not snap.path.is_symlink() else snap.path.unlink()
    wrapper = LedgerReader(fresh(), snapshot=snap)
    wrapper.experiments()
    assert wrapper.save() and LedgerReader(fresh(), snapshot=snap).load()
    assert (snap.path.stat().st_mode & 0o777) == 0o600 and [p.name for p in snap.path.parent.iterdir()] == [snap.path.name]


def test_an_old_snapshot_put_back_serves_no_stale_pull_or_thread(ledger, local_forge, tmp_path):
    """Student code cannot sign a snapshot but can keep a copy of one and put it back later: a
    replayed snapshot verifies, and the job's conditional reads still see the forge as it is now."""
    forge, fresh, _ = ledger
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, f"{local_forge.base_url} {forge.settings.repo}")
    wrapper = LedgerReader(fresh(), snapshot=snap)
    wrapper.experiments()
    assert wrapper.save()
    old = snap.path.read_bytes()
    head = commit_and_push(forge, tmp_path / "seed", forge.get_pull(2).head_ref, {"moved.md": "moved\n"})
    forge.create_comment(2, "/senpai stop")
    forge.set_labels(2, [SENPAI, "status:review"])
    wrapper.experiments()
    assert wrapper.save()
    snap.path.write_bytes(old)  # the replay
    job = LedgerReader(fresh(), snapshot=snap)
    assert job.load()
    pr = job.pull(2)
    assert pr.head_sha == head and pr.labels == [SENPAI, "status:review"]
    thread = [c.body for c in forge.list_comments(2)]
    assert thread[-1] == "/senpai stop" and [c.body for c in job.comments(pr)] == thread
    assert [c.body for c in job.forge.list_comments(2)] == thread  # the memo's page, asked for conditionally


def test_an_old_snapshot_put_back_hands_no_stale_pull_to_a_job_bound_to_the_new_one(ledger, local_forge, tmp_path):
    """`handed` reads no forge, so what the snapshot says is what the verifier measures and records on:
    a replayed old snapshot (student code keeping a copy, or a failed write leaving the last one in
    place) must not hand a job the PR as it was before its head moved and a human stopped it. The
    wrapper hands each job the MAC of the snapshot it wrote (`ENV_SNAPSHOT`); any other is not loaded."""
    forge, fresh, _ = ledger
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, f"{local_forge.base_url} {forge.settings.repo}")
    wrapper = LedgerReader(fresh(), snapshot=snap)
    wrapper.experiments()
    assert wrapper.save()
    old = snap.path.read_bytes()
    head = commit_and_push(forge, tmp_path / "seed", forge.get_pull(2).head_ref, {"moved.md": "moved\n"})
    forge.set_labels(2, [SENPAI, "status:review"])
    wrapper.experiments()
    assert wrapper.save() and wrapper.saved
    snap.path.write_bytes(old)  # the replay
    job = LedgerReader(fresh(), snapshot=snap)
    job.load(expect=wrapper.saved)
    pr = job.handed(2)
    assert pr.head_sha == head and pr.labels == [SENPAI, "status:review"]


def test_a_failed_snapshot_write_binds_jobs_to_no_snapshot(ledger, local_forge, tmp_path, monkeypatch):
    forge, fresh, _ = ledger
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, f"{local_forge.base_url} {forge.settings.repo}")
    wrapper = LedgerReader(fresh(), snapshot=snap)
    wrapper.experiments()
    assert wrapper.save()
    head = commit_and_push(forge, tmp_path / "seed", forge.get_pull(2).head_ref, {"moved.md": "moved\n"})
    wrapper.experiments()

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("senpai.ledger.table.os.replace", full)
    with pytest.raises(OSError):
        wrapper.save()
    monkeypatch.undo()
    assert wrapper.saved is None  # the file on disk is not this reader's ledger: jobs are bound to none
    job = LedgerReader(fresh(), snapshot=snap)
    assert not job.load(expect=wrapper.saved or "none")
    assert job.handed(2).head_sha == head


def test_a_restarted_wrapper_hands_its_jobs_the_snapshot_it_loaded(ledger, local_forge, tmp_path):
    """A wrapper that restarts loads its snapshot and, while nothing changed, writes none: its jobs are
    handed the one it loaded (they must not fall back to reading the whole ledger from the forge)."""
    forge, fresh, _ = ledger
    snap = Snapshot.of(str(tmp_path / "state"), TOKEN, f"{local_forge.base_url} {forge.settings.repo}")
    first = LedgerReader(fresh(), snapshot=snap)
    first.experiments()
    assert first.save()
    restarted = LedgerReader(fresh(), snapshot=snap)
    assert restarted.load() and restarted.saved == first.saved
    assert not restarted.save()  # nothing read since: the file stays, and so does what jobs are handed
    assert LedgerReader(fresh(), snapshot=snap).load(expect=restarted.saved)
