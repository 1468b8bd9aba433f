"""The local forge keeps everything on disk, and `senpai forge serve` runs it as its own process.

A server in a thread writes; it stops; a new process started with the CLI on the same folder
reads it all back, can keep working, and stops cleanly on SIGTERM.
"""

import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from forge_fixtures import TOKEN, clone, commit_and_push, new_repository, register_bot, wait_healthy

from senpai.cli.forge import forge as forge_group
from senpai.forge.github import GitHubForge
from senpai.forge.localforge.server import start_in_thread

SERVE = "from senpai.cli.forge import forge; forge()"


def start_cli(data_dir: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--data", str(data_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    assert line.startswith("url: "), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split(" ", 1)[1].strip()


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
    for option in ("--data", "--host", "--port"):
        assert option in result.output
