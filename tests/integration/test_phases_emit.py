"""A job's `senpai-phases:` record, written by a real process to its stderr, parses back."""

import json
import subprocess
import sys

from senpai import phases


def test_emit_writes_one_line_that_parse_reads_back():
    code = "from senpai import phases; phases.start('student'); phases.mark('command'); phases.emit()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and proc.stderr.startswith(phases.PREFIX)
    rec = phases.parse("some output\n" + proc.stderr + "more output\n")
    assert rec["role"] == "student" and set(rec["marks"]) == {"command"}
    assert phases.parse("no record\n") is None
    assert phases.parse(phases.PREFIX + "{not json\n") is None
    assert json.loads(proc.stderr[len(phases.PREFIX) :]) == rec
