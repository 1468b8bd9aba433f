"""ONNX artifacts: one that keeps tensor data in another file (the holdout, say) is refused.

The models under tests/fixtures/onnx/ were written by the real `onnx` library (1.23.2) with
tests/fixtures/onnx/generate.py, which says how to run it again: `plain.onnx` has a tensor at
every site the schema allows one, each `external-<site>.onnx` the same model with the tensor at
<site> stored at `../holdout/labels.csv`. The limit tests build their bytes here by hand.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from senpai.verifier import onnx_refs
from senpai.verifier.artifacts import refusal
from senpai.verifier.onnx_refs import external_data

FIXTURES = Path(__file__).parents[1] / "fixtures" / "onnx"
PLAIN = (FIXTURES / "plain.onnx").read_bytes()
SITES = sorted(p.name.removeprefix("external-").removesuffix(".onnx") for p in FIXTURES.glob("external-*.onnx"))


def _artifact(tmp_path: Path, data: bytes, name: str = "model.onnx") -> Path:
    d = tmp_path / "artifact"
    d.mkdir()
    (d / name).write_bytes(data)
    return d


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def _msg(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _model_with_tensor(tensor: bytes) -> bytes:
    """ModelProto{ir_version: 10, graph: {initializer: [tensor]}}."""
    return _int(1, 10) + _msg(7, _msg(5, tensor))


def test_the_fixtures_cover_every_site_a_tensor_can_be():
    assert SITES == [
        "constant", "function-attribute-default", "function-node", "if-else", "if-then", "initializer",
        "node-attribute-graphs", "node-attribute-sparse-tensors", "node-attribute-tensor", "node-attribute-tensors",
        "sparse-constant", "sparse-initializer", "training-info",
    ]  # fmt: skip


def test_a_plain_onnx_model_is_accepted(tmp_path):
    assert refusal(_artifact(tmp_path, PLAIN)) is None


@pytest.mark.parametrize("site", SITES)
def test_a_tensor_with_external_data_is_refused_wherever_it_is(tmp_path, site):
    reason = refusal(_artifact(tmp_path, (FIXTURES / f"external-{site}.onnx").read_bytes()))
    assert reason is not None and reason.startswith("artifact model.onnx references external data"), reason


def test_the_refusal_names_where_the_tensor_is(tmp_path):
    reason = refusal(_artifact(tmp_path, (FIXTURES / "external-if-then.onnx").read_bytes()))
    assert "graph.node[2].attribute[1].g.initializer[0]" in reason  # If's then_branch


def test_a_model_saved_with_external_data_beside_it_is_refused_too(tmp_path):
    # what onnx.save_model(save_as_external_data=True) writes for an honest large model: the
    # weights file sits inside the directory, but the loader would follow any location alike
    d = tmp_path / "artifact"
    d.mkdir()
    (d / "model.onnx").write_bytes((FIXTURES / "save-external.onnx").read_bytes())
    (d / "weights.json").write_text("[]")
    reason = refusal(d)
    assert reason is not None and "model.onnx references external data" in reason and "inline" in reason


@pytest.mark.parametrize(
    "tensor",
    [
        _int(14, 1),  # data_location EXTERNAL, no external_data entry
        _int(14, 2),  # a value the schema does not know: not DEFAULT, so refused
        _int(14, 1 << 32 | 1),  # 1 once a parser truncates it to the enum's 32 bits
        _msg(13, _msg(1, b"location") + _msg(2, b"/etc/passwd")),  # an entry, data_location left DEFAULT
    ],
    ids=["external", "unknown-value", "external-in-64-bits", "entry-only"],
)
def test_every_way_to_mark_a_tensor_external_is_refused(tmp_path, tensor):
    data = _model_with_tensor(_msg(8, b"w") + tensor)
    assert "references external data" in refusal(_artifact(tmp_path, data))


def test_an_explicit_default_data_location_is_accepted(tmp_path):
    assert refusal(_artifact(tmp_path, _model_with_tensor(_msg(8, b"w") + _int(14, 0)))) is None


@pytest.mark.parametrize("cut", [1, 7, len(PLAIN) // 3, len(PLAIN) // 2, len(PLAIN) - 1])
def test_a_truncated_model_is_refused(tmp_path, cut):
    reason = refusal(_artifact(tmp_path, PLAIN[:cut]))
    assert reason is not None and "model.onnx is not a well-formed ONNX model" in reason


@pytest.mark.parametrize(
    "data",
    [
        b"\xff" * 64,  # a varint that never ends
        b"not an onnx model at all\n" * 4,
        _int(1, 10) + _varint(7 << 3 | 3) + b"\x00",  # a group (wire type 3) where the graph is
        _int(1, 10) + _int(7, 5),  # the graph as a number
        _model_with_tensor(_msg(8, b"w") + _msg(14, b"\x01")),  # data_location as bytes
        _msg(7, _msg(5, b"")[:-1] + b"\x05"),  # an initializer longer than its graph
    ],
    ids=["endless-varint", "text", "group", "graph-as-number", "data-location-as-bytes", "past-the-end"],
)
def test_garbage_is_refused_not_a_crash(tmp_path, data):
    reason = refusal(_artifact(tmp_path, data))
    assert reason is not None and "is not a well-formed ONNX model" in reason


def test_nesting_is_bounded(tmp_path):
    graph = _msg(5, _msg(8, b"w"))
    for _ in range(onnx_refs.MAX_DEPTH):  # graph.node[0].attribute[0].g ... : three messages a level
        graph = _msg(1, _msg(5, _msg(6, graph)))
    reason = refusal(_artifact(tmp_path, _msg(7, graph)))
    assert reason is not None and f"nested more than {onnx_refs.MAX_DEPTH} deep" in reason


def test_the_number_of_fields_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(onnx_refs, "MAX_FIELDS", 1000)
    graph = b"".join(_msg(1, _msg(3, b"n%d" % i)) for i in range(600))  # 600 nodes with a name each
    reason = refusal(_artifact(tmp_path, _msg(7, graph)))
    assert reason is not None and "more than 1000 protobuf fields" in reason


def test_long_runs_of_attribute_values_are_skipped_and_still_checked(tmp_path):
    # a tree ensemble's unpacked floats and ints: millions of fields, skipped by the regex fast path
    floats = (_varint(7 << 3 | 5) + b"\x00\x00\x80?") * 200_000
    ints = b"".join(_int(8, i) for i in range(200_000))
    tensor = _msg(5, _msg(8, b"w") + _int(14, 1))
    attribute = _msg(1, b"nodes_values") + floats + ints + tensor
    data = _msg(7, _msg(1, _msg(5, attribute)))
    reason = refusal(_artifact(tmp_path, data))
    assert reason is not None and "tensor at graph.node[0].attribute[0].t keeps its data" in reason


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_tensor_data_is_never_read(tmp_path):
    # a 3 GiB inline tensor (a sparse file: no disk used) is checked by a process that stays small
    size = 3 * 1024**3
    tensor = _msg(8, b"w") + _varint(9 << 3 | 2) + _varint(size)  # raw_data: `size` bytes follow
    initializer = _varint(5 << 3 | 2) + _varint(len(tensor) + size)
    graph = _varint(7 << 3 | 2) + _varint(len(initializer) + len(tensor) + size)
    path = tmp_path / "big.onnx"
    with open(path, "wb") as f:
        f.write(graph + initializer + tensor)
        f.truncate(f.tell() + size)
    # VmHWM: the peak RSS of this process image (ru_maxrss would carry the forking pytest's over exec)
    probe = (
        "import re, sys; from pathlib import Path; from senpai.verifier.onnx_refs import external_data; "
        "print(external_data(Path(sys.argv[1]))); print(re.search(r'VmHWM:\\s*(\\d+)', Path('/proc/self/status').read_text())[1])"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True)
    verdict, peak_kib = out.stdout.split()
    assert verdict == "None", out.stdout
    assert int(peak_kib) < 200 * 1024  # far below the file's 3 GiB


def test_an_empty_file_references_nothing(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    assert external_data(path) is None
