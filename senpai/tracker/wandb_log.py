"""An offline W&B run's transaction log (`run-<id>.wandb`), read without importing `wandb`.

wandb 0.31 ships no Python reader for the log (the old `DataStore` is gone), and importing its
protobuf classes means importing `wandb` itself: about 0.65 s of CPU, in every job that reads a
run back. So this module reads the log's LevelDB framing (`log_payloads`) and decodes, from each
payload, only the few fields of wandb's `Record` message (wandb/proto/wandb_internal.proto) the
tracker folds into a run:

    Record          3 summary: SummaryRecord, 5 config: ConfigRecord, 17 run: RunRecord,
                    18 exit: RunExitRecord (members of the `record_type` oneof)
    RunRecord       2 entity, 3 project, 4 config: ConfigRecord, 5 summary: SummaryRecord, 6 run_group, 7 job_type,
                    8 display_name, 9 notes, 10 tags (repeated), 21 git: GitRepoRecord
    GitRepoRecord   1 remote_url, 2 commit
    ConfigRecord, SummaryRecord    1 update, 2 remove (repeated items)
    ConfigItem, SummaryItem        1 key, 2 nested_key (repeated), 16 value_json
    RunExitRecord   1 exit_code (int32)

Field numbers are protobuf's wire contract and do not change between versions; a test decodes
real logs with wandb's own `Record` as well and compares. Every other field is skipped by its
wire type, as protobuf skips unknown fields. A payload that is not valid protobuf, or where a string
read here is not UTF-8, is skipped with a warning, as a protobuf decode error was; so is an item
whose `value_json` does not decode. The run's own program writes the log: any bytes at all.
"""

import json
import logging
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

_BLOCK = 32768  # LevelDB log block, bytes
_CHUNK_HEADER = 7  # crc32 u32, length u16, type u8 (little-endian)
_FILE_HEADER = struct.pack("<4sHB", b":W&B", 0xBEE1, 0)
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4

# Record.record_type members read (field number -> kind)
_KINDS = {3: "summary", 5: "config", 17: "run", 18: "exit"}
# RunRecord's string fields read (field number -> Record attribute)
_RUN_TEXT = {2: "entity", 3: "project", 6: "run_group", 7: "job_type", 8: "display_name", 9: "notes"}
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5  # protobuf wire types (3 and 4, groups, are not used by wandb)


def log_payloads(data: bytes) -> Iterator[bytes]:
    """Whole records of a `.wandb` log, which uses LevelDB's log format.

    The file opens with a 7-byte header (`:W&B`, magic 0xBEE1, version 0) that counts toward the
    first 32 KiB block. Each chunk has a header (crc32 IEEE of type byte + data, length, type) and
    its data, and never crosses a block. Fewer than 7 bytes left in a block are padding. A record
    is one FULL chunk or FIRST, MIDDLE..., LAST. A bad or truncated chunk voids the rest of its
    block (LevelDB's recovery rule), so a log still being written ends at its last whole record.
    """
    if not data.startswith(_FILE_HEADER):
        return
    pos, parts = len(_FILE_HEADER), None
    while pos + _CHUNK_HEADER <= len(data):
        room = _BLOCK - pos % _BLOCK
        if room < _CHUNK_HEADER:
            pos += room
            continue
        crc, size, kind = struct.unpack_from("<IHB", data, pos)
        body = data[pos + _CHUNK_HEADER : pos + _CHUNK_HEADER + size]
        intact = _CHUNK_HEADER + size <= room and len(body) == size
        if not (_FULL <= kind <= _LAST and intact and zlib.crc32(body, zlib.crc32(bytes([kind]))) == crc):
            parts = None
            pos += room
            continue
        pos += _CHUNK_HEADER + size
        if kind == _FULL:
            parts = None
            yield body
        elif kind == _FIRST:
            parts = [body]
        elif parts is not None:
            parts.append(body)
            if kind == _LAST:
                yield b"".join(parts)
                parts = None


# -------------------------------------------------------------------- protobuf, the fields we read


class Malformed(ValueError):
    """A payload that is not a valid protobuf message, or a string read from it that is not UTF-8."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise Malformed("truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of one message: an int for a varint, bytes
    for a length-delimited field, None for a fixed 32/64-bit one (not read here)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise Malformed("field number 0")
        if wire == _VARINT:
            value, pos = _varint(buf, pos)
        elif wire == _LEN:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise Malformed("length past the end of the message")
            value, pos = buf[pos : pos + size], pos + size
        elif wire in (_I64, _I32):
            pos, value = pos + (8 if wire == _I64 else 4), None
            if pos > len(buf):
                raise Malformed("fixed-size field past the end of the message")
        else:
            raise Malformed(f"wire type {wire}")
        yield number, wire, value


def _text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed(f"string is not UTF-8: {e}") from None


@dataclass
class Item:
    """A ConfigItem or SummaryItem: where (`key`, else the `nested_key` path) and `value_json`."""

    key: str = ""
    nested_key: list[str] = field(default_factory=list)
    value_json: str = ""


@dataclass
class Changes:
    """A ConfigRecord or SummaryRecord."""

    update: list[Item] = field(default_factory=list)
    remove: list[Item] = field(default_factory=list)


@dataclass
class Record:
    """The part of one `Record` the tracker folds: `kind` (run, config, summary, exit, or None for
    any other record) and that member's fields."""

    kind: str | None = None
    entity: str = ""
    project: str = ""
    display_name: str = ""
    run_group: str = ""
    job_type: str = ""
    notes: str = ""
    git_remote: str = ""
    git_commit: str = ""
    tags: list[str] = field(default_factory=list)
    config: Changes = field(default_factory=Changes)
    summary: Changes = field(default_factory=Changes)
    exit_code: int = 0


def _item(buf: bytes) -> Item:
    item = Item()
    for number, wire, value in _fields(buf):
        if wire != _LEN:
            continue
        if number == 1:
            item.key = _text(value)
        elif number == 2:
            item.nested_key.append(_text(value))
        elif number == 16:
            item.value_json = _text(value)
    return item


def _git(buf: bytes, into: Record) -> None:
    """Merge a GitRepoRecord's remote_url and commit into `into`."""
    for number, wire, value in _fields(buf):
        if wire == _LEN and number in (1, 2):
            setattr(into, "git_remote" if number == 1 else "git_commit", _text(value))


def _changes(buf: bytes, into: Changes) -> None:
    """Merge a ConfigRecord/SummaryRecord into `into` (protobuf merges a message field seen twice)."""
    for number, wire, value in _fields(buf):
        if wire == _LEN and number in (1, 2):
            (into.update if number == 1 else into.remove).append(_item(value))


def decode(payload: bytes) -> Record:
    """The fields this module reads of one `Record` payload; raises Malformed."""
    rec = Record()
    number, parts = 0, []
    for n, wire, value in _fields(payload):
        if wire == _LEN and n in _KINDS:
            # a oneof: the last member seen wins; the same member twice merges, as concatenation does
            # (joined once at the end: concatenating as they come is quadratic in a hostile payload)
            if n != number:
                number, parts = n, []
            parts.append(value)
    if not parts:
        return rec
    body = b"".join(parts)
    rec.kind = _KINDS[number]
    for n, wire, value in _fields(body):
        if rec.kind == "exit":
            if n == 1 and wire == _VARINT:
                value &= 0xFFFFFFFF  # int32: negative values are sign-extended to 64 bits
                rec.exit_code = value - (1 << 32) if value >= 1 << 31 else value
        elif rec.kind == "run":
            if wire != _LEN:
                continue
            if n in _RUN_TEXT:
                setattr(rec, _RUN_TEXT[n], _text(value))
            elif n == 10:
                rec.tags.append(_text(value))
            elif n == 21:
                _git(value, rec)
            elif n in (4, 5):
                _changes(value, rec.config if n == 4 else rec.summary)
        elif wire == _LEN and n in (1, 2):  # config or summary: the record is the Changes itself
            target = rec.config if rec.kind == "config" else rec.summary
            (target.update if n == 1 else target.remove).append(_item(value))
    return rec


def records(data: bytes) -> Iterator[Record]:
    """Each record of a `.wandb` log (`decode`); payloads that do not decode are skipped."""
    for payload in log_payloads(data):
        try:
            yield decode(payload)
        except Malformed as e:
            log.warning("skipping an undecodable record in a .wandb log: %s", e)


# -------------------------------------------------------------------- the fold


def fold(recs: Iterable[Record]) -> dict[str, Any]:
    """Replay run, config, summary and exit records into name, group, tags, entity, project, job
    type, notes, git commit and remote, config, summary and exit code."""
    out: dict[str, Any] = {"name": None, "group": None, "tags": [], "config": {}, "summary": {}}
    out |= dict.fromkeys(_TEXTS + ("exit_code",))
    for rec in recs:
        if rec.kind == "run":
            out["name"] = rec.display_name or None
            out["group"] = rec.run_group or None
            out["tags"] = list(rec.tags)
            out |= {k: getattr(rec, k) or None for k in _TEXTS}
            _apply(out["config"], rec.config.update)
            _apply(out["summary"], rec.summary.update)
        elif rec.kind == "config":
            _apply(out["config"], rec.config.update, rec.config.remove)
        elif rec.kind == "summary":
            _apply(out["summary"], rec.summary.update, rec.summary.remove)
        elif rec.kind == "exit":
            out["exit_code"] = rec.exit_code
    for internal in ("_wandb", "wandb_version"):  # as the public API's `Run.config` does
        out["config"].pop(internal, None)
    return out


_TEXTS = ("entity", "project", "job_type", "notes", "git_commit", "git_remote")  # fold's texts of a run record


def _apply(target: dict, updates: Iterable[Item], removes: Iterable[Item] = ()) -> None:
    """Set (or delete) each item at its key, or at its nested key path."""
    for item in updates:
        if not (path := _key_path(item)):
            continue
        *parents, leaf = path
        node = target
        for k in parents:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        try:
            node[leaf] = _value(item)
        except Malformed as e:
            log.warning("skipping an item of a .wandb log: %s", e)
    for item in removes:
        if not (path := _key_path(item)):
            continue
        *parents, leaf = path
        node = target
        for k in parents:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)


def _key_path(item: Item) -> list[str]:
    return [item.key] if item.key else list(item.nested_key)


def _value(item: Item) -> Any:
    """An item's value: `value_json` is Python-flavoured JSON (NaN, Infinity, -Infinity). Raises
    Malformed if it is not JSON, nests deeper than the interpreter recurses, or holds an integer
    over Python's 4,300 digits (the run's own program wrote it: any bytes at all)."""
    try:
        return json.loads(item.value_json) if item.value_json else None
    except (ValueError, RecursionError) as e:
        raise Malformed(f"value of {_key_path(item)[:3]} is not JSON: {str(e)[:100]}") from None
