"""The local forge keeps everything on disk, and `senpai forge serve` runs it as its own process.

A server in a thread writes; it stops; a new process started with the CLI on the same folder
reads it all back, can keep working, and stops cleanly on SIGTERM.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from forge_fixtures import TOKEN, clone, commit_and_push, new_repository, register_bot, run_git, wait_healthy

from senpai.cli.forge import forge as forge_group
from senpai.errors import ConfigError
from senpai.forge.github import GitHubForge
from senpai.forge.localforge.merges import CRASH_ENV
from senpai.forge.localforge.server import start_in_thread

SERVE = "from senpai.cli.forge import forge; forge()"


def start_cli(data_dir: Path, cwd: Path | None = None, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--data", str(data_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    line = proc.stdout.readline()
    assert line.startswith("url: "), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split(" ", 1)[1].strip()


def _tokens(proc: subprocess.Popen) -> dict[str, str]:
    """The `data:` line, then `bot_token:`/`human_token:` if the folder had no tokens yet."""
    out = {}
    while (line := proc.stdout.readline()) and not line.startswith("data: "):
        pass
    for _ in range(2):
        key, _, value = proc.stdout.readline().partition(": ")
        out[key] = value.strip()
    return out


def test_a_forge_killed_mid_merge_reports_the_merge_after_restart(tmp_path):
    """SIGKILL between the base's git update and the PR's row update, on a relative --data: after a
    restart the PR is merged at the commit that reached the base.  A PR whose head an admin pushed
    into the base by git is marked merged too (as GitHub does)."""
    crash = {CRASH_ENV: "1"}
    proc, url = start_cli(Path("forge"), cwd=tmp_path, env=crash)
    try:
        tokens = _tokens(proc)
        assert set(tokens) == {"bot_token", "human_token"} and tokens["bot_token"] != tokens["human_token"]
        forge, settings = new_repository(url, tmp_path / "seed", token=tokens["bot_token"])
        pushed = commit_and_push(forge, tmp_path / "seed", "senpai/a/pushed", {"p.txt": "p\n"}, start="advisor")
        by_push = forge.create_pull("pushed", "", "senpai/a/pushed", "advisor", [])
        run_git(tmp_path / "seed", "push", "-q", "origin", "senpai/a/pushed:advisor", env=forge.git_env())
        head = commit_and_push(forge, tmp_path / "seed", "senpai/a/b", {"x.txt": "x\n"}, start="advisor")
        pr = forge.create_pull("crash", "", "senpai/a/b", "advisor", [])
        with pytest.raises(httpx.TransportError):
            auth = {"Authorization": f"token {tokens['bot_token']}"}
            httpx.put(f"{url}/repos/{settings.repo}/pulls/{pr.number}/merge", json={"sha": head}, headers=auth, timeout=60)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.communicate(timeout=15)
    bare = tmp_path / "forge" / "git" / settings.repo.replace("/", os.sep)
    tip = run_git(Path(f"{bare}.git"), "rev-parse", "refs/heads/advisor")
    assert run_git(Path(f"{bare}.git"), "rev-parse", f"{tip}^2") == head  # the merge reached git

    proc, url = start_cli(Path("forge"), cwd=tmp_path)
    try:
        assert proc.stdout.readline().startswith("data: ")
        again = GitHubForge(settings.model_copy(update={"base_url": url}), tokens["bot_token"])
        merged = again.get_pull(pr.number)
        assert (merged.state, merged.merged, merged.merge_commit_sha, merged.head_sha) == ("closed", True, tip, head)
        other = again.get_pull(by_push.number)
        assert (other.merged, other.head_sha) == (True, pushed)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    assert "bot_token" not in out  # printed once, on the first start


def test_data_survives_a_restart_in_a_new_process(tmp_path):
    data = tmp_path / "forge"
    server = register_bot(start_in_thread(data))
    try:
        forge, settings = new_repository(server.url, tmp_path / "seed")
        commit_and_push(forge, tmp_path / "seed", "senpai/a/b", {"x.txt": "x\n"}, start="advisor")
        pr = forge.create_pull("kept", "body", "senpai/a/b", "advisor", ["senpai"])
        forge.create_comment(pr.number, "still here")
    finally:
        server.stop()

    proc, url = start_cli(data)
    try:
        wait_healthy(url)
        again = GitHubForge(settings.model_copy(update={"base_url": url}), TOKEN)
        kept = again.get_pull(pr.number)
        assert (kept.title, kept.labels, kept.head_sha) == ("kept", ["senpai"], pr.head_sha)
        assert [c.body for c in again.list_comments(pr.number)] == ["still here"]
        assert again.create_issue("next", "", []).number == pr.number + 1
        sha = again.merge_pull(pr.number, "merge after restart", pr.head_sha)
        assert (clone(again, tmp_path / "fresh", "advisor") / "x.txt").read_text() == "x\n"
        assert again.branch_sha("advisor") == sha
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert "stopped" in err


def test_cli_help_names_the_options():
    result = CliRunner().invoke(forge_group, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--data", "--host", "--port", "--protect"):
        assert option in result.output


def test_forge_token_creates_a_working_token_for_a_user_and_role(tmp_path):
    data = tmp_path / "forge"
    args = ["token", "--data", str(data), "--user", "alice", "--role", "collaborator"]
    typo = CliRunner().invoke(forge_group, args)  # a typo'd --data must not start a forge silently
    assert isinstance(typo.exception, ConfigError) and "--new" in str(typo.exception) and not data.exists()
    result = CliRunner().invoke(forge_group, [*args, "--new"])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    assert CliRunner().invoke(forge_group, ["token", "--data", str(data), "--user", "../x"]).exit_code == 2
    server = start_in_thread(data)
    try:
        me = httpx.get(f"{server.url}/user", headers={"Authorization": f"token {token}"})
        assert me.json()["login"] == "alice"
        assert server.store.role("alice") == "collaborator" and token not in (data / "forge.sqlite3").read_bytes().decode(
            "latin-1"
        )
    finally:
        server.stop()


def test_the_demo_holds_the_bots_token_out_of_the_env_and_gives_a_human_a_collaborators(tmp_path, monkeypatch):
    from senpai.cli.demo import forge_tokens
    from senpai.config import credentials

    monkeypatch.delenv("SENPAI_TEST_DEMO_TOKEN", raising=False)
    server = start_in_thread(tmp_path / "forge")
    try:
        human = forge_tokens(server, "SENPAI_TEST_DEMO_TOKEN")
        assert "SENPAI_TEST_DEMO_TOKEN" not in os.environ  # held, for the wrapper and (on a pipe) its jobs
        bot = credentials.get("SENPAI_TEST_DEMO_TOKEN")
        for token, login, role in ((bot, "senpai", "owner"), (human, "human", "collaborator")):
            assert httpx.get(f"{server.url}/user", headers={"Authorization": f"token {token}"}).json()["login"] == login
            assert server.store.role(login) == role
    finally:
        server.stop()
