"""Baseline reuse's own checks: what the sealed holdout's fingerprint sees, and which recorded
baseline figures a later verification may take (`senpai.verifier.reuse`)."""

import importlib.metadata
import math
import os
from pathlib import Path

import yaml
from second_python import venv_with
from tiny_target import files

from senpai.config.target import TargetConfig
from senpai.fleet.base import ENV_TRAIN_GPUS
from senpai.ledger.blocks import Verification
from senpai.verifier.reuse import holdout_fingerprint, installed, measurement_key, samples, score_environment


def holdout(root: Path) -> Path:
    (root / "labels").mkdir(parents=True)
    (root / "labels" / "y.csv").write_text("3,1,4\n")
    (root / "x.csv").write_text("0.1,0.2\n")
    return root


def test_a_change_anywhere_in_the_holdout_changes_its_fingerprint(tmp_path):
    root = holdout(tmp_path / "h")
    first = holdout_fingerprint(root)
    assert first is not None and holdout_fingerprint(root) == first
    (root / "labels" / "y.csv").write_text("3,1,5\n")
    assert holdout_fingerprint(root) not in (None, first)
    second = holdout_fingerprint(root)
    (root / "empty").mkdir()  # a folder is part of what a scorer may list
    assert holdout_fingerprint(root) != second
    third = holdout_fingerprint(root)
    (root / "..user-file").write_text("mine")  # only the kubelet's own `..data` / `..<timestamp>` are skipped
    assert holdout_fingerprint(root) != third


def test_files_behind_a_symlinked_folder_are_hashed(tmp_path):
    elsewhere = tmp_path / "store"
    elsewhere.mkdir()
    (elsewhere / "y.csv").write_text("3,1,4\n")
    root = tmp_path / "h"
    root.mkdir()
    (root / "labels").symlink_to(elsewhere, target_is_directory=True)
    before = holdout_fingerprint(root)
    (elsewhere / "y.csv").write_text("9,9,9\n")
    assert holdout_fingerprint(root) not in (None, before)


def test_a_symlink_loop_ends_and_a_secret_volumes_own_entries_are_skipped(tmp_path):
    root = holdout(tmp_path / "h")
    plain = holdout_fingerprint(root)
    (root / "labels" / "up").symlink_to(root, target_is_directory=True)  # a loop: walked once
    looped = holdout_fingerprint(root)
    assert looped is not None and looped != plain
    # a Secret volume: `..2026_12_01_...` holds the files, `..data` links to it, keys link into `..data`
    volume = tmp_path / "secret"
    stamp = volume / "..2026_12_01_21_00_00.123"
    stamp.mkdir(parents=True)
    (stamp / "y.csv").write_text("3,1,4\n")
    (volume / "..data").symlink_to(stamp.name)
    (volume / "y.csv").symlink_to("..data/y.csv")
    mounted = holdout_fingerprint(volume)
    newer = volume / "..2026_12_01_22_00_00.456"  # the kubelet's atomic update: a new stamp, same files
    stamp.rename(newer)
    (volume / "..data").unlink()
    (volume / "..data").symlink_to(newer.name)
    assert holdout_fingerprint(volume) == mounted


def test_an_unreadable_holdout_has_no_fingerprint(tmp_path):
    root = holdout(tmp_path / "h")
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    assert holdout_fingerprint(root) is None
    assert holdout_fingerprint(tmp_path / "missing") is None


def test_a_holdout_holding_a_fifo_has_no_fingerprint_and_is_not_waited_on(tmp_path):
    root = holdout(tmp_path / "h")
    os.mkfifo(root / "labels" / "pipe")  # opening it to read would wait for a writer for ever
    assert holdout_fingerprint(root) is None
    (root / "labels" / "pipe").unlink()
    (root / "zero").symlink_to("/dev/zero")  # endless to read; a device is not a file
    assert holdout_fingerprint(root) is None


def target(**compute) -> TargetConfig:
    data = yaml.safe_load(files()["senpai.yaml"])
    data["holdout"]["compute"] |= compute
    return TargetConfig.model_validate(data)


def test_the_measurement_key_covers_the_tree_and_environment_and_is_none_when_seconds_are_compared(tmp_path, monkeypatch):
    root = holdout(tmp_path / "h")
    monkeypatch.setenv(ENV_TRAIN_GPUS, "1")
    key = measurement_key(target(), "b" * 40, root)
    assert key is not None and key == measurement_key(target(), "b" * 40, root)
    assert measurement_key(target(), "c" * 40, root) != key
    assert measurement_key(target(), None, root) is None  # no tree (the candidate does not merge): nothing to key
    assert measurement_key(target(tolerance=0.5), "b" * 40, root) != key
    monkeypatch.setenv(ENV_TRAIN_GPUS, "2")  # a student with more GPUs: its numbers are another measurement
    assert measurement_key(target(), "b" * 40, root) not in (None, key)
    # seconds measured under another load are not this run's: such a target measures both sides each time
    assert measurement_key(target(seconds=True), "b" * 40, root) is None


def test_the_measurement_key_covers_what_holdout_python_has_installed(tmp_path, monkeypatch):
    root = holdout(tmp_path / "h")
    python = venv_with(tmp_path / "venv", {})
    declared = target().model_copy(update={"holdout": target().holdout.model_copy(update={"python": str(python)})})
    key = measurement_key(declared, "b" * 40, root)
    assert key is not None and key not in (measurement_key(target(), "b" * 40, root), None)
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    (site / "probe_dist-1.0.dist-info").mkdir()
    (site / "probe_dist-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: probe-dist\nVersion: 1.0\n")
    score_environment.cache_clear()  # asked once a process: a job is a new process
    assert measurement_key(declared, "b" * 40, root) not in (None, key)  # the evaluator's packages changed
    gone = declared.holdout.model_copy(update={"python": str(tmp_path / "gone" / "python")})
    assert measurement_key(declared.model_copy(update={"holdout": gone}), "b" * 40, root) is None  # nothing to key


def verification(**figures) -> Verification:
    fields = {
        "pr": 1, "candidate": "1" * 40, "baseline": "b" * 40, "metric": "acc", "direction": "maximize",
        "seeds": [0, 1], "candidate_values": [0.5, 0.5], "baseline_values": [0.6, 0.7],
        "candidate_mean": 0.5, "baseline_mean": 0.65, "improvement": -0.15, "noise_floor": 0.01,
        "baseline_key": "k" * 64, "passed": False, "reason": "r", "baseline_seconds": [2.0, 3.0],
        "baseline_gpu_seconds": [0.0, 0.0], "baseline_guards": {"loss": [0.1, 0.2]},
    }  # fmt: skip
    return Verification(**{**fields, **figures})


def test_samples_take_a_seed_only_when_every_figure_is_a_real_measurement():
    both = samples(verification(), 1)
    assert sorted(both) == [0, 1] and both[1].value == 0.7 and both[1].guards == {"loss": 0.2}
    for bad in (
        {"baseline_values": [math.nan, 0.7]},
        {"baseline_seconds": [math.inf, 3.0]},
        {"baseline_seconds": [-1.0, 3.0]},
        {"baseline_gpu_seconds": [math.nan, 0.0]},
        {"baseline_guards": {"loss": [math.nan, 0.2]}},
        {"baseline_compute": [math.inf, 1.0]},
    ):
        assert sorted(samples(verification(**bad), 1)) == [1], bad
    assert samples(verification(baseline_seconds=[2.0]), 1) == {}  # figures that do not line up: none
    # the candidate's side, by the same rules
    assert samples(verification(), 1, "candidate") == {}  # its per-seed figures were not recorded
    cand = verification(candidate_seconds=[1.0, 1.5], candidate_gpu_seconds=[0.0, 0.0], candidate_guards={"loss": [0.3, 0.4]})
    got = samples(cand, 4, "candidate")
    assert sorted(got) == [0, 1] and got[1].value == 0.5 and got[1].guards == {"loss": 0.4} and got[1].source == 4
    assert sorted(samples(cand.model_copy(update={"candidate_values": [0.5, math.nan]}), 4, "candidate")) == [0]


def test_installed_reads_each_distributions_name_and_version_as_importlib_metadata_does():
    """The environment in the baseline key is read off the METADATA headers (fast); the same as the email parse."""
    parsed = {(d.metadata["Name"] or "").lower(): d.version for d in importlib.metadata.distributions()}
    assert installed() == parsed and len(parsed) > 10
