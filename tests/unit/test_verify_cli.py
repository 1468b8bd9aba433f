"""`senpai job verify --side`: required by `--step train`, refused by every other step (a click usage error, exit 2)."""

import pytest
from click.testing import CliRunner
from walled import harness_at

from senpai.cli.job import job
from senpai.config import safe_yaml


@pytest.mark.parametrize(
    "args, message",
    [
        (["--step", "train"], "--side is required with --step train"),
        (["--step", "score", "--side", "candidate"], "--side is only for --step train"),
        (["--side", "baseline"], "--side is only for --step train"),  # --step all
    ],
)
def test_side_goes_with_the_train_step_only(tmp_path, args, message):
    config = tmp_path / "harness.yaml"  # never read: the usage error comes first
    result = CliRunner().invoke(job, ["verify", "--config", str(config), "--pr", "1", *args, "--work", str(tmp_path / "w")])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not (tmp_path / "w").exists()


def test_a_train_step_without_its_side_dir_is_an_error_not_a_run(tmp_path):
    config = tmp_path / "h.yaml"
    config.write_text(safe_yaml.dump(harness_at(tmp_path / "senpai").model_dump(mode="json")))  # for the step's wall
    result = CliRunner().invoke(
        job,
        [
            "verify",
            "--config",
            str(config),
            "--pr",
            "1",
            "--step",
            "train",
            "--side",
            "candidate",
            "--work",
            str(tmp_path),
        ],
    )
    assert result.exit_code != 0 and "candidate/job.json is unreadable" in str(result.exception)
    assert not (tmp_path / "candidate" / "train.json").exists()
