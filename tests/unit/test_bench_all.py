"""bench/all.py cites the result file its own child wrote (`record.write_result` names it in
`$SENPAI_BENCH_RESULT`), not the newest file of its kind: another run may write one meanwhile."""

import sys
import textwrap
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
try:
    import all as bench_all
finally:
    sys.path.remove(str(BENCH))  # bench/research.py must not shadow tests/e2e/research.py for later tests


def figure(tmp_path: Path, body: str) -> bench_all.Figure:
    """A figure whose script (absolute: `ROOT / "bench" / script` is then the script) runs `body`
    with bench/record.py writing under tmp_path/results."""
    script = tmp_path / "figure.py"
    head = f"import sys, pathlib; sys.path.insert(0, {str(BENCH)!r})\nimport record\n"
    head += f"record.RESULTS = pathlib.Path({str(tmp_path / 'results')!r})\n"
    script.write_text(head + textwrap.dedent(body))
    return bench_all.Figure("a figure", str(script), (), ())


def test_the_summary_cites_the_file_its_child_wrote_not_a_newer_one_of_its_kind(tmp_path):
    f = figure(
        tmp_path,
        """
        record.write_result("fig-20260101T000000Z", {"n": 1}, "| own |\\n")
        (record.RESULTS / "fig-20990101T000000Z.md").write_text("| another run's |\\n")  # newer, meanwhile
        """,
    )
    bench = bench_all.Bench(quick=True, logs=tmp_path)
    run = bench.start(f)
    bench.wait(run)
    text, ok = bench.section(run)
    assert ok and "| own |" in text and "another run's" not in text
    assert str(tmp_path / "results" / "fig-20260101T000000Z.md") in text


def test_a_figure_that_wrote_no_result_is_reported_failed_even_if_others_of_its_kind_exist(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "fig-20990101T000000Z.md").write_text("| another run's |\n")
    bench = bench_all.Bench(quick=True, logs=tmp_path)
    run = bench.start(figure(tmp_path, "print('measured nothing')\n"))
    bench.wait(run)
    text, ok = bench.section(run)
    assert not ok and "failed" in text and "another run's" not in text
