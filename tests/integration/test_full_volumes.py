"""A full volume under the forge or under a work copy is senpai's failure (a real full tmpfs: root).

The local forge on a full volume answers what GitHub answers when it cannot serve: a 503 with a
Retry-After, so senpai waits and tries again (TransientError), never takes it for a refusal. A git
command that fails in a work copy on a full volume is DiskFull (exit 6), not a PermanentError (exit
4, which the wrapper would charge to the hypothesis).
"""

import pytest
from forge_fixtures import new_repository, register_bot
from full_disk import fill, small_volume

from senpai.errors import DiskFull, TransientError
from senpai.forge.localforge.app import FULL_RETRY_SECONDS
from senpai.forge.localforge.server import LocalForgeServer
from senpai.job.workcopy import WorkCopy


def test_a_forge_whose_volume_is_full_answers_503_with_a_retry_after(tmp_path):
    with small_volume(tmp_path / "forge-volume", "8m") as volume:
        server = register_bot(LocalForgeServer(volume / "data")).start()
        try:
            forge, _ = new_repository(server.url, tmp_path / "seed")
            issue = forge.create_issue("before", "there was room", [])
            filler = fill(volume)
            with pytest.raises(TransientError, match="data volume is full") as full:
                forge.create_comment(issue.number, "x" * 60_000)
            assert full.value.retry_after is not None and full.value.retry_after >= FULL_RETRY_SECONDS - 1
            assert forge.list_comments(issue.number) == []  # reads still work: the forge is up, writes wait
            filler.unlink()
            assert forge.create_comment(issue.number, "room again").body == "room again"
        finally:
            server.stop()


def test_a_git_command_that_fails_on_a_full_work_copy_is_disk_full(forge_repo, tmp_path):
    forge, _ = forge_repo
    with small_volume(tmp_path / "work-volume", "4m") as volume:
        repo = WorkCopy.clone(forge.clone_url, volume / "repo", forge.git_env(), "advisor")
        (repo.path / "params.yaml").write_text("lr: 0.2\n")
        fill(volume)
        with pytest.raises(DiskFull, match="git add failed on it") as full:
            repo.commit_all("apply params")
        assert full.value.path == str(repo.path) and full.value.exit_code == 6


def test_a_run_that_cannot_be_taken_into_a_full_tracker_folder_is_disk_full(tmp_path):
    """A train command logs its run in its own folder; taking it into a full tracker folder is
    senpai's failure (DiskFull, naming the tracker's folder), and leaves no half-copied run there."""
    from datetime import UTC, datetime, timedelta

    from senpai.tracker.wandb_collect import take

    now = datetime.now()
    run = tmp_path / "own" / "wandb" / f"offline-run-{now:%Y%m%d_%H%M%S}-r1"
    run.mkdir(parents=True)
    (run / "run-r1.wandb").write_bytes(b"\0" * 600_000)
    window = (datetime.now(UTC) - timedelta(seconds=5), datetime.now(UTC) + timedelta(seconds=5))
    with small_volume(tmp_path / "tracker", "1m") as tracker:
        fill(tracker)
        with pytest.raises(DiskFull, match="tracker") as full:
            take("r1", tmp_path / "own", tracker, window)
        assert str(tracker) in str(full.value)
        assert not list((tracker / "wandb").glob("*r1*"))  # nothing half-copied left in the tracker
