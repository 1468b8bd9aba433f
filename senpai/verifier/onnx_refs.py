"""Does an ONNX model file keep all its tensors' data inside itself? A bounded read of its protobuf.

An ONNX tensor may keep its bytes in another file: `data_location = EXTERNAL` and `external_data`
entries whose `location` is a path relative to the model, or absolute, or with `..`. A loader
(onnxruntime, `onnx.load` before it checked paths) reads that file, so a train step could make the
score step read the holdout, or any file the verifier can. `external_data(path)` finds every such
tensor, wherever the schema lets one be: graph initializers and sparse initializers, node attributes
(`t`, `tensors`, `sparse_tensor(s)`: Constant's value among them), subgraphs (`g`, `graphs`: If, Loop,
Scan bodies), functions (their nodes and attribute defaults) and training graphs, at any depth.

Not the `onnx` package (a large dependency for one check, and its parser loads the whole model)
nor `protobuf` (it keeps unknown fields, so a 2 GiB model is 2 GiB in memory): the file is mapped
and only the messages that can hold a tensor are walked, every other field skipped by its length,
so no tensor data is read. Limits: at most MAX_FIELDS fields and MAX_DEPTH nested messages; a file
over them, or one that is not well-formed protobuf (a length past its message's end, a varint of
more than 10 bytes, a group or an unknown wire type, a known field of the wrong wire type), is
refused like one with external data.

Field numbers from onnx/onnx.proto (IR version 14; they have never changed, only been added).
"""

import mmap
import re
from pathlib import Path

MAX_FIELDS = 50_000_000  # a big tree ensemble has ~10 unpacked attribute values per tree node
MAX_DEPTH = 64  # nested messages; a Loop body in a Loop body is 6 deep
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5

# message -> {field number: (child message, its name in a refusal: "[]" if repeated)}; only the fields
# that can hold a tensor
_MODEL, _TRAINING, _FUNCTION, _GRAPH, _NODE, _ATTRIBUTE, _SPARSE, _TENSOR = range(8)
_CHILDREN: dict[int, dict[int, tuple[int, str]]] = {
    _MODEL: {7: (_GRAPH, "graph"), 20: (_TRAINING, "training_info[]"), 25: (_FUNCTION, "functions[]")},
    _TRAINING: {1: (_GRAPH, "initialization"), 2: (_GRAPH, "algorithm")},
    _FUNCTION: {7: (_NODE, "node[]"), 11: (_ATTRIBUTE, "attribute_proto[]")},
    _GRAPH: {1: (_NODE, "node[]"), 5: (_TENSOR, "initializer[]"), 15: (_SPARSE, "sparse_initializer[]")},
    _NODE: {5: (_ATTRIBUTE, "attribute[]")},
    _ATTRIBUTE: {
        5: (_TENSOR, "t"),
        6: (_GRAPH, "g"),
        10: (_TENSOR, "tensors[]"),
        11: (_GRAPH, "graphs[]"),
        22: (_SPARSE, "sparse_tensor"),
        23: (_SPARSE, "sparse_tensors[]"),
    },  # fmt: skip
    _SPARSE: {1: (_TENSOR, "values"), 2: (_TENSOR, "indices")},
    _TENSOR: {},
}
_EXTERNAL_DATA, _DATA_LOCATION = 13, 14  # TensorProto
_TENSOR_WIRE = {_EXTERNAL_DATA: _LEN, _DATA_LOCATION: _VARINT}
_RUNS: dict[int, re.Pattern[bytes]] = {}


class Malformed(ValueError):
    """The bytes are not a protobuf message within the limits."""


def _varint(buf: mmap.mmap | bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it."""
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise Malformed(f"a varint runs past its message or beyond 10 bytes (at byte {pos})")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _skip_run(buf: mmap.mmap | bytes, tag: int, pos: int, end: int) -> int:
    """The position after the run of scalar fields of one-byte `tag` that starts at `pos` (a tree
    ensemble's unpacked attribute values: millions of them), skipped at the regex engine's speed."""
    if (run := _RUNS.get(tag)) is None:
        value = {_VARINT: rb"[\x80-\xff]{0,9}[\x00-\x7f]", _I64: rb".{8}", _I32: rb".{4}"}[tag & 7]
        run = _RUNS[tag] = re.compile(b"(?:" + re.escape(bytes([tag])) + value + b")*+", re.DOTALL)
    return run.match(buf, pos, end).end()  # type: ignore[union-attr]  # `*` matches the empty run


def scan(buf: mmap.mmap | bytes) -> str | None:
    """Where the ModelProto in `buf` holds a tensor with external data (a path of field names, e.g.
    `graph.node[2].attribute[0].g.initializer[0]`), or None if none does. Raises Malformed."""
    stack = [(_MODEL, 0, len(buf), "model", 0)]
    fields = 0
    while stack:
        kind, pos, end, where, depth = stack.pop()
        children, seen = _CHILDREN[kind], dict[int, int]()
        while pos < end:
            at = pos
            tag, pos = _varint(buf, pos, end)
            number, wire = tag >> 3, tag & 7
            fields += 1
            if fields > MAX_FIELDS:
                raise Malformed(f"more than {MAX_FIELDS} protobuf fields")
            if number == 0 or wire not in (_VARINT, _I64, _LEN, _I32):
                raise Malformed(f"field {number} of wire type {wire} at byte {at} (a group, or not protobuf)")
            if (number in children and wire != _LEN) or (
                kind == _TENSOR and number in (_EXTERNAL_DATA, _DATA_LOCATION) and wire != _TENSOR_WIRE[number]
            ):
                raise Malformed(f"{where}: field {number} of wire type {wire} at byte {at}")
            if kind == _TENSOR and number in (_EXTERNAL_DATA, _DATA_LOCATION):
                value, _ = _varint(buf, pos, end)
                if number == _EXTERNAL_DATA or value != 0:  # 0 is DEFAULT; EXTERNAL (1) or an unknown value is refused
                    return where
            if wire != _LEN:
                pos = _varint(buf, pos, end)[1] if wire == _VARINT else pos + (8 if wire == _I64 else 4)
                if tag < 0x80 and pos < end and buf[pos] == tag:
                    pos = _skip_run(buf, tag, pos, end)
            else:
                size, pos = _varint(buf, pos, end)
                start, pos = pos, pos + size
                if (child := children.get(number)) is not None and pos <= end:
                    if depth >= MAX_DEPTH:
                        raise Malformed(f"messages nested more than {MAX_DEPTH} deep")
                    name = child[1]
                    if name.endswith("[]"):
                        seen[number] = seen.get(number, -1) + 1
                        name = f"{name[:-1]}{seen[number]}]"
                    stack.append((child[0], start, pos, f"{where}.{name}", depth + 1))
            if pos > end:
                raise Malformed(f"{where}: the field at byte {at} runs past the end of its message (byte {end})")
    return None


def external_data(path: Path) -> str | None:
    """Why the ONNX file at `path` must not be loaded: where it references external data, or that
    it is not a well-formed ONNX protobuf within the limits; None if it holds all its data itself.
    Reads only the file's message structure, never its tensor data. Raises OSError if it cannot be read."""
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            return None  # an empty ModelProto: nothing to reference (and nothing a loader accepts)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            try:
                where = scan(buf)
            except Malformed as e:
                return f"is not a well-formed ONNX model ({e})"
    if where is None:
        return None
    where = where.removeprefix("model.")
    return f"references external data (tensor at {where} keeps its data in another file); save the model with its tensors inline"
