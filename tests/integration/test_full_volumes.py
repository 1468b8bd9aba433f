"""A full volume under the forge or under a work copy is senpai's failure (a real full tmpfs: root).

The local forge on a full volume answers what GitHub answers when it cannot serve: a 503 with a
Retry-After, so senpai waits and tries again (TransientError), never takes it for a refusal. A git
command that fails in a work copy on a full volume is DiskFull (exit 6), not a PermanentError (exit
4, which the wrapper would charge to the hypothesis).
"""

import pytest
from forge_fixtures import new_repository, register_bot
from full_disk import fill, small_volume

from senpai.agents.workcopy import WorkCopy
from senpai.errors import DiskFull, TransientError
from senpai.forge.localforge.app import FULL_RETRY_SECONDS
from senpai.forge.localforge.server import LocalForgeServer


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
