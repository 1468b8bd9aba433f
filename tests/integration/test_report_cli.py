"""`senpai report` as a user meets it after `senpai demo`: `--local-forge` on a forge's data folder
(no server running), an HTML page and a Markdown file from the ledger, W&B offline."""

import base64
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from forge_fixtures import forge_folder_with_a_pr

from senpai.cli.main import cli
from senpai.errors import ConfigError

REASON = "<script>alert(1)</script> no better than the base"


@pytest.fixture
def stopped_forge(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A forge data folder (no server running) with one senpai PR closed by a decision whose reason
    is hostile; returns (data folder, harness config)."""
    data, settings, _ = forge_folder_with_a_pr(tmp_path, "try x", reason=REASON)
    config = tmp_path / "harness.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "forge": {"base_url": settings.base_url, "repo": settings.repo, "token_env": "SENPAI_REPORT_TEST_TOKEN"},
                "tracker": {"dir": str(tmp_path / "wandb"), "mode": "offline"},
                "fleet": {"dir": str(tmp_path / "jobs")},
                "state_dir": str(tmp_path / "state"),
                "students": [{"name": "ada"}],
            }
        )
    )
    monkeypatch.delenv("SENPAI_REPORT_TEST_TOKEN", raising=False)
    return data, config


def test_the_report_of_a_demo_folder_as_html_and_markdown(stopped_forge, tmp_path):
    data, config = stopped_forge
    page, md = tmp_path / "out" / "report.html", tmp_path / "out" / "BASELINE.md"
    page.parent.mkdir()
    args = ["report", "--config", str(config), "--local-forge", str(data)]
    result = CliRunner().invoke(cli, [*args, "--out", str(page)])
    assert result.exit_code == 0, result.output
    assert f"report: {page} (1 experiments, 0 verified merges)" in result.output
    html = page.read_text()
    images = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    assert len(images) == 3 and all(b"<svg" in base64.b64decode(i) for i in images)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; no better than the base" in html and "<script" not in html
    assert "127.0.0.1" not in html and "#1" in html  # the temporary forge's links would be dead: none

    result = CliRunner().invoke(cli, [*args, "--format", "md", "--out", str(md)])
    assert result.exit_code == 0, result.output
    first = md.read_text().splitlines()[0]
    assert "cache of the ledger" in first and "senpai report" in first

    missing = tmp_path / "no-such-folder" / "r.html"
    result = CliRunner().invoke(cli, [*args, "--out", str(missing)])
    assert isinstance(result.exception, ConfigError) and f"the folder {missing.parent} does not exist" in str(result.exception)
