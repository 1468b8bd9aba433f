"""The train step's reading of printed values (`senpai.job.measure`): its possessive patterns read
exactly what the plain backtracking ones read, and a line with no separator is not parsed."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from senpai.job.measure import LINE, NUMBER, PAIR, _Reader

# the patterns as they were before the names became possessive: the reference for what is read
PLAIN_LINE = re.compile(rb"^([A-Za-z0-9_./-]+):[ \t]*(\S+)\s*$")
PLAIN_PAIR = re.compile(
    rb"(?<![A-Za-z0-9_./-])([A-Za-z][A-Za-z0-9_./-]*(?: [A-Za-z][A-Za-z0-9_./-]*)?)[ \t]*[:=][ \t]*("
    + NUMBER
    + rb")(?![A-Za-z0-9_.])",
    re.IGNORECASE,
)
LINES = st.binary(max_size=80) | st.text(alphabet="ab xX.:=-_/\t019eE+nainf|%", max_size=80).map(str.encode)


@settings(max_examples=3000, deadline=None)
@given(LINES)
def test_the_possessive_patterns_read_what_the_backtracking_ones_read(line: bytes) -> None:
    assert [m.groups() for m in PAIR.finditer(line)] == [m.groups() for m in PLAIN_PAIR.finditer(line)]
    plain, possessive = PLAIN_LINE.match(line), LINE.match(line)
    assert (plain and plain.groups()) == (possessive and possessive.groups())


def test_a_line_without_a_separator_sets_nothing_and_one_with_sets_its_values() -> None:
    reader = _Reader(pipe=None, log=None)
    for line in (b"x" * 1023, b"epoch 3 val acc 0.9", b'{"acc" 1}'):
        reader._parse(line)
    assert reader.values == {}
    for line in (b"acc: 0.5", b"step 3 | val loss=0.25", b'{"auc": 0.9}'):
        reader._parse(line)
    assert reader.values == {"acc": "0.5", "val_loss": "0.25", "loss": "0.25", "auc": "0.9"}
