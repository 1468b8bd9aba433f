"""The train step's reading of printed values (`senpai.job.measure`): its possessive patterns read
exactly what the plain backtracking ones read, and a line with no separator is not parsed."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from senpai.job.measure import LINE, PAIR, _Reader

# the patterns as they were before names and numbers became possessive: the reference for what is read
PLAIN_NUMBER = rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)"
PLAIN_LINE = re.compile(rb"^([A-Za-z0-9_./-]+):[ \t]*(\S+)\s*$")
PLAIN_PAIR = re.compile(
    rb"(?<![A-Za-z0-9_./-])([A-Za-z][A-Za-z0-9_./-]*(?: [A-Za-z][A-Za-z0-9_./-]*)?)[ \t]*[:=][ \t]*("
    + PLAIN_NUMBER
    + rb")(?![A-Za-z0-9_.])",
    re.IGNORECASE,
)
LINES = st.binary(max_size=80) | st.text(alphabet="ab xX.:=-_/\t019eE+nainf|%", max_size=80).map(str.encode)
# the shapes that backtracked for seconds at 4 KiB (a long number its end refuses), at a size the
# reference patterns still read in milliseconds
DIGITS = b"1" * 300
LONG = [b"a=" + DIGITS + end for end in (b"x", b"_", b".", b"e", b"")] + [
    b"x a: " + DIGITS + b"x", b"a=" + DIGITS + b"e" + DIGITS + b"x", b"a=" + DIGITS + b"." + DIGITS + b"x",
    b"seed=" + DIGITS + b"5.5e-3", b"a=-" + DIGITS + b"e+" + DIGITS, b" ".join([b"k=" + b"6" * 60 + b"x"] * 63),
]  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(LINES)
def test_the_possessive_patterns_read_what_the_backtracking_ones_read(line: bytes) -> None:
    assert [m.groups() for m in PAIR.finditer(line)] == [m.groups() for m in PLAIN_PAIR.finditer(line)]
    plain, possessive = PLAIN_LINE.match(line), LINE.match(line)
    assert (plain and plain.groups()) == (possessive and possessive.groups())


@pytest.mark.parametrize("line", LONG, ids=range(len(LONG)))
def test_long_numbers_are_read_as_the_backtracking_patterns_read_them(line: bytes) -> None:
    assert [m.groups() for m in PAIR.finditer(line)] == [m.groups() for m in PLAIN_PAIR.finditer(line)]
    plain, possessive = PLAIN_LINE.match(line), LINE.match(line)
    assert (plain and plain.groups()) == (possessive and possessive.groups())


def test_a_line_without_a_separator_or_a_json_objects_strings_set_nothing_and_values_are_read() -> None:
    reader = _Reader(pipe=None, log=None)
    for line in (b"x" * 1023, b"epoch 3 val acc 0.9", b'{"acc" 1}', b'{"done": true, "note": "loss=0.5"}'):
        reader._parse(line)
    assert reader.values == {}
    for line in (b"acc: 0.5", b"step 3 | val loss=0.25", b'{"auc": 0.9}'):
        reader._parse(line)
    assert reader.values == {"acc": "0.5", "val_loss": "0.25", "loss": "0.25", "auc": "0.9"}
