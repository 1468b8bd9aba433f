"""The artifact check: only safe formats are scored; pickle is refused by name and by content."""

import json
import os
import pickle
import zipfile
from pathlib import Path

import pytest

from senpai.verifier.artifacts import MAX_FILES, digest, refusal, set_read_only, snapshot


def _dir(tmp_path: Path, files: dict[str, bytes]) -> Path:
    d = tmp_path / "artifact"
    d.mkdir()
    for name, data in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)
    return d


@pytest.mark.parametrize(
    "name",
    ["model.json", "model.safetensors", "model.onnx", "model.skops", "sub/dir/weights.safetensors"],
)
def test_safe_formats_are_accepted(tmp_path, name):
    data = json.dumps({"w": [1, 2]}).encode() if name.endswith(".json") else b"\x08\x00binary"
    if name.endswith(".onnx"):  # an ONNX file is read as one (test_artifacts_onnx.py)
        data = (Path(__file__).parents[1] / "fixtures" / "onnx" / "plain.onnx").read_bytes()
    assert refusal(_dir(tmp_path, {name: data})) is None


@pytest.mark.parametrize(
    "files, words",
    [
        ({"model.pkl": pickle.dumps({"w": 1})}, ["model.pkl", "not a safe format"]),
        ({"model.joblib": b"x"}, ["model.joblib", "not a safe format"]),
        ({"ok.json": b"{}", "model.json": pickle.dumps([1])}, ["model.json", "pickle"]),
        ({"model.safetensors": pickle.dumps([1], protocol=2)}, ["model.safetensors", "pickle"]),
        ({"broken.json": b"{not json"}, ["broken.json", "not valid JSON"]),
        ({}, ["no artifact"]),
    ],
)
def test_unsafe_artifacts_are_refused_naming_the_file(tmp_path, files, words):
    reason = refusal(_dir(tmp_path, files))
    assert reason is not None
    for w in words:
        assert w in reason


def test_a_zip_holding_a_pickle_is_refused_whatever_its_name(tmp_path):
    d = _dir(tmp_path, {})
    with zipfile.ZipFile(d / "model.skops", "w") as z:  # torch.save's layout: archive/data.pkl
        z.writestr("archive/data.pkl", pickle.dumps([1]))
    reason = refusal(d)
    assert reason is not None and "model.skops" in reason and "data.pkl" in reason


def test_a_zip_without_pickle_passes(tmp_path):
    d = _dir(tmp_path, {})
    with zipfile.ZipFile(d / "model.skops", "w") as z:
        z.writestr("schema.json", "{}")
    assert refusal(d) is None


def test_symlinks_are_refused(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    d = _dir(tmp_path, {"model.json": b"{}"})
    (d / "link.json").symlink_to(secret)
    reason = refusal(d)
    assert reason is not None and "link.json" in reason and "symlink" in reason


def test_an_artifact_directory_that_is_a_symlink_is_refused(tmp_path):
    # the train step may replace its own $SENPAI_ARTIFACT_DIR: the evaluator would then read (and
    # set_read_only would chmod) whatever directory it points at
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "model.json").write_text("{}")
    (tmp_path / "candidate-0").symlink_to(elsewhere)
    assert "the artifact directory candidate-0 is a symlink" in refusal(tmp_path / "candidate-0")


def test_total_size_is_capped(tmp_path):
    d = _dir(tmp_path, {"a.json": b"[" + b"1," * 100 + b"1]", "b.json": b"[" + b"2," * 100 + b"2]"})
    assert refusal(d, max_bytes=10_000) is None
    reason = refusal(d, max_bytes=250)
    assert reason is not None and "250 bytes" in reason and "b.json" in reason


def test_digest_changes_with_content_and_read_only_clears_every_write_bit(tmp_path):
    d = _dir(tmp_path, {"model.json": b'{"w": 1}', "sub/w.json": b"[]"})
    before = digest(d)
    (d / "model.json").write_bytes(b'{"w": 2}')
    assert digest(d) != before
    (d / "sub" / "w.json").rename(d / "sub" / "v.json")
    assert digest(d) != before
    set_read_only(d)  # mode bits, not a PermissionError: root (these machines) writes anyway
    paths = [d, d / "sub", d / "model.json", d / "sub" / "v.json"]
    assert [p.stat().st_mode & 0o222 for p in paths] == [0, 0, 0, 0]
    set_read_only(d, False)
    assert all(p.stat().st_mode & 0o200 for p in paths)


def test_a_directory_of_many_entries_is_refused_without_walking_it_all(tmp_path):
    artifact = _dir(tmp_path, {"model.json": b"{}"})
    for i in range(MAX_FILES):  # empty directories count: a walk of millions would never end
        (artifact / f"d{i}").mkdir()
    assert refusal(artifact) == f"the artifact directory holds more than {MAX_FILES} files and directories"


def test_a_snapshot_is_the_same_artifact_where_no_command_writes(tmp_path):
    """The score step checks and scores a copy (`snapshot`): a process the train step left behind
    cannot swap the model between the check and the load."""
    src = _dir(tmp_path, {"model.json": b'{"w": 1}', "sub/weights.safetensors": b"\x08\x00binary"})
    assert snapshot(src, tmp_path / "copy") is None
    assert digest(tmp_path / "copy") == digest(src) and refusal(tmp_path / "copy") is None
    (src / "model.json").write_bytes(b'{"w": 2}')  # after the copy: the copy is what is scored
    assert (tmp_path / "copy" / "model.json").read_bytes() == b'{"w": 1}'


def test_a_snapshot_copies_no_link_fifo_or_more_than_the_cap(tmp_path):
    secret = tmp_path / "holdout.csv"
    secret.write_text("the sealed holdout\n")
    for sub in "abd":
        (tmp_path / sub).mkdir()
    linked = _dir(tmp_path / "a", {"model.json": b"{}"})
    (linked / "data.json").symlink_to(secret)
    assert "data.json is a symlink" in snapshot(linked, tmp_path / "c1")
    assert not (tmp_path / "c1" / "data.json").exists()
    fifo = _dir(tmp_path / "b", {"model.json": b"{}"})
    os.mkfifo(fifo / "pipe.json")
    assert "not a regular file" in snapshot(fifo, tmp_path / "c2")  # and does not block on it
    big = _dir(tmp_path / "d", {"model.safetensors": b"x" * 5000})
    assert "past the 4096 bytes" in snapshot(big, tmp_path / "c3", max_bytes=4096)
