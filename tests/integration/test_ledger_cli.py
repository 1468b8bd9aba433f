"""`senpai ledger` as a user meets it: its flags, `--local-forge` on a forge's data folder, the
consistency flags for what was done by hand (a PR reopened after a close decision), and, after a
merge, each holdout delta named by its base in the ledger, the report and the status alike."""

import csv
import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from forge_fixtures import after_a_merge, clone, commit_and_push, hypothesis, new_repository, register_bot

from senpai.cli.ledger import _cell
from senpai.cli.main import cli
from senpai.errors import ConfigError
from senpai.forge.localforge.server import LocalForgeServer
from senpai.ledger import transitions
from senpai.ledger.blocks import Decision, Hypothesis
from senpai.ledger.records import record_text


def _config(tmp: Path, base_url: str, repo: str) -> Path:
    config = {
        "forge": {"base_url": base_url, "repo": repo, "token_env": "SENPAI_LEDGER_TEST_TOKEN", "base_branch": "advisor"},
        "tracker": {"dir": str(tmp / "wandb")},
        "fleet": {"dir": str(tmp / "jobs")},
        "state_dir": str(tmp / "state"),
        "students": [{"name": "ada"}],
    }
    path = tmp / "harness.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _hypothesis(base: str) -> Hypothesis:
    return hypothesis(base, "h-reopen")


@pytest.fixture
def stopped_forge(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A forge data folder (no server running) holding one senpai PR that was closed by a decision
    and then reopened by hand; returns (data folder, harness config)."""
    data = tmp_path / "forge"
    server = register_bot(LocalForgeServer(data)).start()
    try:
        forge, settings = new_repository(server.url, tmp_path / "seed")
        base = forge.branch_sha("advisor")
        work = clone(forge, tmp_path / "work", "advisor")
        commit_and_push(forge, work, "senpai/ada/h-reopen", {"x.md": "x\n"}, start="advisor")
        pr = transitions.open_experiment(forge, _hypothesis(base), "senpai/ada/h-reopen", "advisor", "reopen")
        d = Decision(pr=pr.number, head=pr.head_sha, verdict="close", reason="not better")
        forge.create_comment(pr.number, record_text(d, "**Decision** close"))
        forge.update_pull(pr.number, state="closed")
        forge.update_pull(pr.number, state="open")  # reopened by hand
        config = _config(tmp_path, server.url, settings.repo)
    finally:
        server.stop()
    monkeypatch.delenv("SENPAI_LEDGER_TEST_TOKEN", raising=False)
    return data, config


def _senpai(*args: str) -> subprocess.CompletedProcess:
    """The real console entry point (exit codes from the error tree)."""
    return subprocess.run([sys.executable, "-m", "senpai", *args], capture_output=True, text=True, timeout=120)


def _tokens(data: Path) -> int:
    with sqlite3.connect(data / "forge.sqlite3") as db:
        return db.execute("SELECT COUNT(*) FROM tokens").fetchone()[0]


def test_local_forge_reads_with_a_token_it_revokes_and_flags_a_reopened_pr(stopped_forge):
    data, config = stopped_forge
    before = _tokens(data)
    codes = {}
    for args in (["--check"], ["--json"], ["--csv"]):
        result = _senpai("ledger", "--config", str(config), "--local-forge", str(data), *args)
        assert "#1: open after a close decision (reopened by hand?)" in result.stderr, (args, result.stderr)
        codes[args[0]] = result.returncode
    assert codes == {"--check": 5, "--json": 0, "--csv": 0}  # elsewhere the flag is shown, not a failure
    assert _tokens(data) == before  # every token the command made for itself is gone again


def test_a_folder_without_a_forge_is_refused_and_left_alone(stopped_forge):
    data, config = stopped_forge
    result = _senpai("ledger", "--config", str(config), "--local-forge", str(data.parent))
    assert result.returncode == ConfigError.exit_code
    assert f"did you mean {data}?" in result.stderr
    assert not (data.parent / "forge.sqlite3").exists() and not (data.parent / "git").exists()


def test_output_formats_are_alternatives(stopped_forge):
    data, config = stopped_forge
    result = CliRunner().invoke(cli, ["ledger", "--config", str(config), "--json", "--csv"])
    assert result.exit_code == 2 and "alternatives" in result.output
    assert "Traceback" not in result.output and not result.stdout.startswith("senpai ledger")  # refused before reading


def test_values_are_plain_and_only_deltas_carry_a_sign():
    assert _cell("value", 0.425) == "0.4250"
    assert _cell("verifier_delta", 0.012) == "+0.0120"


def test_serving_on_a_port_in_use_is_a_clear_error(tmp_path):
    server = LocalForgeServer(tmp_path / "a").start()
    try:
        result = _senpai("forge", "serve", "--data", str(tmp_path / "b"), "--port", str(server.port))
        assert result.returncode == ConfigError.exit_code
        assert f"cannot listen on 127.0.0.1:{server.port}: the port is in use" in result.stderr
        assert "pick another --port" in result.stderr and "Traceback" not in result.stderr
    finally:
        server.stop()


def test_after_a_merge_the_ledger_the_report_and_the_status_name_each_deltas_base(tmp_path, monkeypatch):
    """Over the real local forge (HTTP, git): a PR verified before a merge shows +0.08 against the old
    base, more than the merge's +0.05; every view says so, and which base each delta is against."""
    data = tmp_path / "forge"
    server = register_bot(LocalForgeServer(data)).start()
    try:
        forge, settings = new_repository(server.url, tmp_path / "seed")
        m = after_a_merge(forge, tmp_path)
    finally:
        server.stop()
    monkeypatch.delenv("SENPAI_LEDGER_TEST_TOKEN", raising=False)
    config = _config(tmp_path, server.url, settings.repo)
    args = ["--config", str(config), "--local-forge", str(data)]
    start, stale = m.start[:8], f"old base {m.start[:8]}"
    monkeypatch.setenv("COLUMNS", "100")
    table = CliRunner().invoke(cli, ["ledger", *args])
    assert table.exit_code == 0, table.output
    cells = [line.strip("│").split("│") for line in table.output.splitlines() if line.startswith("│")]
    delta, changed = (" ".join(w for c in cells for w in c[i].split()) for i in (4, 5))  # a cell wraps: its words in order
    assert f"+0.0800 vs {stale}" in delta and f"+0.0200 vs #{m.merged}" in delta and "width 32 -> 80" in changed
    rows = {int(r["pr"]): r for r in csv.DictReader(io.StringIO(CliRunner().invoke(cli, ["ledger", *args, "--csv"]).output))}
    assert (rows[m.stale]["verifier_vs"], rows[m.stale]["verifier_stale"]) == (f"vs {stale}", "True")
    assert (rows[m.current]["verifier_vs"], rows[m.current]["change"]) == (f"vs #{m.merged}", "width 32 -> 80")
    report = tmp_path / "report.md"
    result = CliRunner().invoke(cli, ["report", *args, "--format", "md", "--out", str(report), "--no-wandb"])
    assert result.exit_code == 0, result.output
    md = report.read_text()
    assert f"| _+0.0800 vs {stale}_ |" in md and f"| +0.0200 vs #{m.merged} |" in md and f"| +0.0500 vs {start} |" in md
    status = json.loads(CliRunner().invoke(cli, ["status", *args, "--json"]).output)
    by_pr = {e["pr"]: e for e in status["open"]}
    assert (by_pr[m.stale]["vs"], by_pr[m.stale]["stale"], by_pr[m.current]["vs"]) == (f"vs {stale}", True, f"vs #{m.merged}")
