"""`senpai forge seed`: create a repository on a running forge and push an example as main + advisor."""

import subprocess
from pathlib import Path
from uuid import uuid4

from click.testing import CliRunner
from forge_fixtures import TOKEN

from senpai.cli.main import cli
from senpai.config.harness import ForgeSettings
from senpai.errors import ConfigError, PermanentError
from senpai.forge.github import GitHubForge


def test_seed_pushes_main_and_the_base_branch(local_forge, tmp_path: Path) -> None:
    example = tmp_path / "example"
    example.mkdir()
    (example / "train.py").write_text("print('val_accuracy: 0.5')\n")
    repo = f"senpai/seed-{uuid4().hex[:8]}"
    args = [
        "forge",
        "seed",
        "--url",
        local_forge.base_url,
        "--repo",
        repo,
        "--example",
        str(example),
        "--base-branch",
        "research",
    ]
    result = CliRunner().invoke(cli, args, env={"GITHUB_TOKEN": TOKEN})
    assert result.exit_code == 0, result.output
    assert f"repo: {repo}\nclone_url: {local_forge.base_url}/git/{repo}.git\n" == result.output
    forge = GitHubForge(ForgeSettings(base_url=local_forge.base_url, repo=repo), None)
    assert forge.branch_sha("main") == forge.branch_sha("research")

    # the seed commit is deterministic (fixed identity and dates), so seeding again changes nothing
    sha = forge.branch_sha("main")
    assert CliRunner().invoke(cli, args, env={"GITHUB_TOKEN": TOKEN}).exit_code == 0 and forge.branch_sha("main") == sha

    # other files are unrelated history: git refuses the push, and the command says so
    (example / "train.py").write_text("print('val_accuracy: 0.6')\n")
    other = CliRunner().invoke(cli, args, env={"GITHUB_TOKEN": TOKEN})
    assert isinstance(other.exception, PermanentError) and "git push failed" in str(other.exception)
    assert forge.branch_sha("main") == sha


def test_seed_refuses_a_bad_repo_name(local_forge) -> None:
    result = CliRunner().invoke(cli, ["forge", "seed", "--url", local_forge.base_url, "--repo", "no-slash"])
    assert isinstance(result.exception, ConfigError) and "--repo 'no-slash'" in str(result.exception)


def test_seed_takes_the_files_of_a_target_that_is_a_git_repository(local_forge, tmp_path: Path) -> None:
    """A researcher's own target is usually a git repository: its files are seeded, not its `.git`."""
    example = tmp_path / "wine"
    example.mkdir()
    (example / "train.py").write_text("print('val_accuracy: 0.5')\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "mine"]):
        subprocess.run(["git", *args], cwd=example, check=True, capture_output=True)
    repo = f"senpai/seed-{uuid4().hex[:8]}"
    args = ["forge", "seed", "--url", local_forge.base_url, "--repo", repo, "--example", str(example)]
    result = CliRunner().invoke(cli, args, env={"GITHUB_TOKEN": TOKEN})
    assert result.exit_code == 0, result.output
    forge = GitHubForge(ForgeSettings(base_url=local_forge.base_url, repo=repo), None)
    assert forge.read_file("train.py", "main") == "print('val_accuracy: 0.5')\n"
