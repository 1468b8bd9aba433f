"""A run's transaction log is written by the run's own program: any bytes at all. A bad one must
leave its own run unreadable or partial, never stop a read of the others (the wrapper reads every
experiment's runs in one `get_runs`).

The logs are framed here by hand (LevelDB's log format, as `wandb_log.log_payloads` reads it) around
hand-encoded `Record` payloads (the field numbers `senpai.tracker.wandb_log` names)."""

import struct
import zlib

import pytest

from senpai.config.harness import TrackerSettings
from senpai.tracker import wandb as wandb_tracker
from senpai.tracker.wandb import WandbTracker
from senpai.tracker.wandb_log import decode


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _len(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _summary(key: str, value_json: str) -> bytes:
    """A Record whose `summary` (3) updates (1) one item: key (1), value_json (16)."""
    return _len(3, _len(1, _len(1, key.encode()) + _len(16, value_json.encode())))


EXIT_OK = _len(18, b"\x08\x00")  # Record.exit, exit_code 0


def _framed(payloads: list[bytes]) -> bytes:
    out = bytearray(struct.pack("<4sHB", b":W&B", 0xBEE1, 0))
    for payload in payloads:
        first = True
        while True:
            room = 32768 - len(out) % 32768
            if room < 7:
                out += b"\0" * room
                continue
            chunk, payload = payload[: room - 7], payload[room - 7 :]
            kind = (1 if not payload else 2) if first else (4 if not payload else 3)
            out += struct.pack("<IHB", zlib.crc32(chunk, zlib.crc32(bytes([kind]))), len(chunk), kind) + chunk
            first = False
            if not payload:
                break
    return bytes(out)


def _tracker(root, logs: dict[str, list[bytes]]) -> WandbTracker:
    for run_id, payloads in logs.items():
        run_dir = root / "wandb" / f"offline-run-20261201_000000-{run_id}"
        run_dir.mkdir(parents=True)
        (run_dir / f"run-{run_id}.wandb").write_bytes(_framed(payloads))
    return WandbTracker(TrackerSettings(dir=str(root), mode="offline"))


@pytest.mark.parametrize("value_json", ["{", "[" * 100_000, "1" * 5000], ids=["not-json", "deep", "huge-int"])
def test_a_value_that_is_not_json_is_skipped_and_the_other_runs_read(tmp_path, value_json):
    tracker = _tracker(
        tmp_path,
        {
            "bad": [_summary("acc", "0.5"), _summary("loss", value_json), EXIT_OK],
            "good": [_summary("acc", "0.9"), EXIT_OK],
        },
    )
    runs = tracker.get_runs(["bad", "good"])
    assert runs["good"].summary == {"acc": 0.9} and runs["good"].state == "finished"
    assert runs["bad"].summary == {"acc": 0.5} and runs["bad"].state == "finished"


def test_a_log_over_the_limit_is_not_read(tmp_path, monkeypatch):
    tracker = _tracker(
        tmp_path, {"big": [_summary("acc", "0.5" + " " * 4000), EXIT_OK], "good": [_summary("acc", "0.9"), EXIT_OK]}
    )
    monkeypatch.setattr(wandb_tracker, "MAX_LOG_BYTES", 2000)
    runs = tracker.get_runs(["big", "good"])
    assert runs["big"].state not in ("finished", "crashed") and runs["big"].summary == {}  # as if still running
    assert runs["good"].summary == {"acc": 0.9}


def test_a_member_repeated_many_times_merges_as_protobuf_does():
    # protobuf merges a message field seen twice; 200,000 repeats of an empty `summary` (joined
    # once: a concatenation per repeat was quadratic, minutes of the wrapper's CPU for a few MB)
    item = _len(1, _len(1, b"acc") + _len(16, b"0.7"))
    payload = _len(3, b"") * 200_000 + _len(3, item)
    rec = decode(payload)
    assert rec.kind == "summary" and [(i.key, i.value_json) for i in rec.summary.update] == [("acc", "0.7")]
