"""Where a figure's results go: `bench/results/<prefix><UTC>.json` (every number) and `.md` (its
table), written together by `write_result`. Under `bench/all.py` the child also names the .md it
wrote in the file `$SENPAI_BENCH_RESULT` names, so the summary cites that file, never merely the
newest of its kind (another run's, written meanwhile)."""

import json
import os
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
RESULT_ENV = "SENPAI_BENCH_RESULT"  # set by bench/all.py: a file to name the written .md in


def utc_stamp() -> str:
    """Now, as the result files name it: 20261207T031500Z."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def write_result(name: str, data: object, md: str) -> Path:
    """Write `bench/results/<name>.json` (`data`, indented) and `<name>.md` (`md`); return the .md
    path, also written into the file `$SENPAI_BENCH_RESULT` names where it is set."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
    path = RESULTS / f"{name}.md"
    path.write_text(md)
    if told := os.environ.get(RESULT_ENV):
        Path(told).write_text(str(path))
    return path
