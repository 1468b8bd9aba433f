"""`senpai report` over a ledger built on the Forge fake through senpai's own transitions: one merged,
one closed and one failed experiment.  The HTML has its figures, links and rejected reasons, and no
hostile text raw; the Markdown says it is a cache and holds the table; the W&B Report is built with
its blocks (not saved: there is no server here)."""

import base64
import logging
import re
import sys

import pytest
from click.testing import CliRunner
from forge_fixtures import REPORT_TARGET, after_a_merge, commit_and_push, merged, verified_experiment

from senpai.cli.report import report
from senpai.config.harness import TrackerSettings
from senpai.errors import ConfigError
from senpai.ledger.table import LedgerReader
from senpai.report import render
from senpai.report.summary import summarise
from senpai.tracker.wandb import WandbTracker
from senpai.tracker.wandb_report import build_report, build_workspace

HOSTILE = "<script>alert('pwned')</script> below the floor | ```senpai-decision"


@pytest.fixture
def ledger(fake_forge, tmp_path):
    forge, _ = fake_forge
    base = commit_and_push(
        forge, tmp_path / "seed", "advisor", {"senpai.yaml": REPORT_TARGET, "params.json": '{"width": 8}\n', "eval.py": "x\n"}
    )
    closed = verified_experiment(forge, tmp_path, base, 1, 0.91, "close", HOSTILE, improvement=0.002)
    merged = verified_experiment(forge, tmp_path, base, 2, 0.95, "merge", "beats the floor", improvement=0.05)
    failed = verified_experiment(
        forge, tmp_path, forge.branch_sha("advisor"), 3, None, "close", "the run crashed: NaN", improvement=None
    )
    return LedgerReader(forge).experiments(), (merged, closed, failed)


def _svgs(page: str) -> list[str]:
    return [base64.b64decode(m).decode() for m in re.findall(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)]


def test_the_summary_counts_costs_and_orders_the_baseline(ledger):
    exps, (merged, closed, failed) = ledger
    s = summarise(exps, "senpai/target")
    assert s.counts == {"experiments": 3, "merged": 1, "closed": 1, "failed": 1, "open": 0, "holdout_verdicts": 2}
    assert [r.outcome for r in s.rows] == ["closed", "merged", "failed"]
    assert [(st.pr, st.value) for st in s.steps] == [(None, 0.90), (merged, pytest.approx(0.95))]
    assert s.best.pr == merged and s.merges == 1
    # 3 x 30 s of students; each of the 2 verifications trains 3 candidate seeds (3.5 s) and 3 baseline seeds (3 s)
    assert s.total.student_seconds == 90 and s.total.verifier_seconds == 39 and s.total.tokens == 3000
    assert s.per_improvement.seconds == 129 and s.per_improvement.dollars == pytest.approx(0.75)
    assert {r.pr: r.reason for r in s.rejected}[failed] == "the run crashed: NaN"
    assert {r.pr: r.failure for r in s.rejected}[failed] == "NaN loss at step 3"
    # both sides' compute per training, and the merges' holdout improvement per unit of it: 0.05 / 20
    assert {r.pr: (r.compute, r.base_compute) for r in s.rows} == {closed: (20, 10), merged: (20, 10), failed: (None, None)}
    assert s.per_compute == pytest.approx(0.0025)
    text = render.markdown(s)
    assert "| 20.000 (10.000) |" in text and "**Holdout improvement per unit of compute:** +0.0025" in text


def test_the_best_result_is_the_best_verified_holdout_not_the_last_merge():
    # #7 merged first; #5 landed on #7's merge commit with a lower holdout mean
    s = summarise([merged(5, 0.93, "merge-7"), merged(7, 0.95, "b" * 40)], "senpai/target")
    assert [(st.pr, st.value) for st in s.steps] == [(None, 0.5), (7, 0.95), (5, 0.93)]
    assert (s.best.pr, s.best.value, s.merges) == (7, 0.95, 2)
    assert "- **Best result:** acc = 0.950 on the holdout (higher is better), by PR #7." in render.markdown(s)


def test_the_holdout_is_described_in_its_own_direction():
    # the hypotheses maximise their validation metric; the verifications judged a holdout loss
    s = summarise([merged(5, 0.3, "merge-7", direction="minimize"), merged(7, 0.4, "b" * 40, direction="minimize")], "t")
    assert (s.best.pr, s.better, s.holdout_better) == (5, "higher is better", "lower is better")
    assert "acc = 0.300 on the holdout (lower is better), by PR #5." in render.markdown(s)


def test_the_html_page_has_figures_links_and_reasons_and_no_hostile_text_raw(ledger):
    exps, (merged, closed, failed) = ledger
    page = render.html(summarise(exps, "senpai/target"))
    svgs = _svgs(page)
    assert len(svgs) == 3 and all(svg.lstrip().startswith("<?xml") and "<svg" in svg for svg in svgs)
    assert "<script" not in page and "<b>bold</b>" not in page  # a reason and a title, both escaped
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt; below the floor" in page
    assert "the run crashed: NaN" in page and "NaN loss at step 3" in page
    for pr in (merged, closed, failed):
        assert re.search(rf'<a href="[^"]+/pull/{pr}">#{pr}</a>', page)
    assert '<a href="https://wandb.example/senpai/runs/run-2">run-2</a>' in page
    assert "higher is better" in page and f"PR #{merged}</a>" in page


def test_a_link_that_is_not_http_is_not_a_link(ledger):
    exps, _ = ledger
    evil = exps[0].model_copy(update={"url": "javascript:alert(1)"})
    page = render.html(summarise([evil, *exps[1:]], "senpai/target"))
    assert "javascript:" not in page


def test_the_markdown_says_it_is_a_cache_and_holds_the_table(ledger):
    exps, (merged, closed, failed) = ledger
    md = render.markdown(summarise(exps, "senpai/target"))
    first, *rest = md.splitlines()
    assert "cache of the ledger" in first and "senpai report" in first
    assert "| PR | outcome | student | changed | acc | verifier Δ | noise floor | compute (base) | verdict | cost |" in md
    assert re.search(rf"^\| \[#{merged}\]\(\S+/pull/{merged}\) \| merged \| ada \|", md, re.MULTILINE)
    (line,) = [x for x in rest if x.startswith(f"- [#{closed}]")]
    assert "<script" not in md and "&lt;script>" in line and "\\|" in line and "```" not in line


def test_the_wandb_report_is_built_with_the_summary_and_panels(ledger):
    exps, _ = ledger
    spec = render.tracker_spec(summarise(exps, "senpai/target"))
    built = build_report(spec, "team", "senpai-demo")
    assert [type(b).__name__ for b in built.blocks] == ["H1", "MarkdownBlock", "PanelGrid"]
    assert built.blocks[1].text.startswith("> **This file is a cache of the ledger**")
    grid = built.blocks[2]
    assert grid.runsets[0].project == "senpai-demo" and "senpai" in str(grid.runsets[0].filters)
    assert {type(p).__name__ for p in grid.panels} >= {"BarPlot", "LinePlot", "ScatterPlot"}
    space = build_workspace(spec, "team", "senpai-demo")
    assert space.name == "senpai: senpai/target" and space._to_model().display_name == "senpai: senpai/target"


def test_offline_nothing_is_published_and_one_line_says_so(tmp_path, caplog):
    tracker = WandbTracker(TrackerSettings(project="p", dir=str(tmp_path), mode="offline"))
    spec = render.tracker_spec(summarise([], "senpai/target"))
    with caplog.at_level(logging.INFO, logger="senpai.tracker.wandb"):
        assert tracker.publish_report(spec) == []
    assert [r.getMessage() for r in caplog.records] == ["W&B is offline (no WANDB_API_KEY): no W&B report or workspace published"]


def test_an_empty_ledger_still_makes_a_page():
    page = render.html(summarise([], "senpai/target"))
    assert len(_svgs(page)) == 3 and "no verified merge yet" in page


def test_the_help_has_an_example():
    out = CliRunner().invoke(report, ["--help"]).output
    assert "Example" in out and "senpai report --config demo-out/run1/harness.yaml --local-forge demo-out/run1/forge" in out


def test_a_refusal_for_a_conflict_does_not_hide_what_the_verifier_measured(ledger):
    exps, (merged, closed, failed) = ledger
    e = next(e for e in exps if e.pr == closed)
    v = e.verifications[-1]
    refused = v.model_copy(update={"improvement": None, "noise_floor": None, "conflict": True, "passed": False})
    s = summarise([e.model_copy(update={"verifications": [v, refused]})], "senpai/target")
    assert (s.rows[0].improvement, s.rows[0].floor) == (0.002, 0.01)


def test_without_wandb_workspaces_publishing_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb_workspaces", None)  # what an environment without the extra imports
    spec = render.tracker_spec(summarise([], "senpai/target"))
    with pytest.raises(ConfigError, match=r"pip install 'senpai\[report\]'"):
        build_report(spec, "team", "senpai-demo")


def test_a_metric_name_with_dollars_is_drawn_as_text(ledger):
    exps, _ = ledger
    h = exps[-1].hypothesis
    odd = h.model_copy(update={"metric": h.metric.model_copy(update={"name": r"acc $\undefinedmacro{x}$ <b>"})})
    page = render.html(summarise([*exps[:-1], exps[-1].model_copy(update={"hypothesis": odd})], "senpai/target"))
    assert len(_svgs(page)) == 3 and r"acc $\undefinedmacro{x}$ &lt;b&gt;" in page


def test_hypotheses_proposed_under_the_diversity_alarm_are_shown_with_its_reading(ledger):
    exps, (merged, closed, failed) = ledger
    assert "Never raised" in render.html(summarise(exps, "senpai/target"))
    reading = "params spread 0.012 < 0.1 over the last 6 points <i>"
    marked = [
        e.model_copy(update={"hypothesis": e.hypothesis.model_copy(update={"exploration": reading})}) if e.pr == closed else e
        for e in exps
    ]
    s = summarise(marked, "senpai/target")
    assert [r.pr for r in s.explored] == [closed]
    page, md = render.html(s), render.markdown(s)
    assert "params spread 0.012 &lt; 0.1 over the last 6 points &lt;i&gt;" in page and "<i>" not in page
    assert f"#{closed}]" in md.split("## Diversity alarm")[1] and "params spread 0.012" in md


def test_after_a_merge_each_delta_names_its_base_and_one_against_the_old_base_is_stale(fake_forge, tmp_path):
    """The open PR verified before the merge has the largest delta (+0.08 against the old base, the
    merge's +0.05): it is named stale, set apart in both tables and left out of the chart."""
    forge, _ = fake_forge
    m = after_a_merge(forge, tmp_path)
    s = summarise(LedgerReader(forge).experiments(), "senpai/target", base=m.base)
    rows = {r.pr: r for r in s.rows}
    start = m.start[:8]
    assert (rows[m.merged].vs, rows[m.merged].stale) == (f"vs {start}", False)  # a merge's gain over the base of its time
    assert (rows[m.stale].vs, rows[m.stale].stale, rows[m.stale].improvement) == (f"vs old base {start}", True, 0.08)
    assert (rows[m.current].vs, rows[m.current].stale) == (f"vs #{m.merged}", False)
    assert [r.pr for r in s.stale] == [m.stale]
    # what each changed: against the merge commit's params (#2's), or, before the merge, a base the ledger did not measure
    assert (rows[m.current].change, rows[m.stale].change, rows[m.merged].change) == ("width 32 -> 80", "width=64", "width=32")
    md = render.markdown(s)
    assert f"| _+0.0800 vs old base {start}_ |" in md and f"| +0.0200 vs #{m.merged} |" in md and "| width 32 -> 80 |" in md
    page = render.html(s)
    assert '<td class="num stale" title="measured against a base that is no longer the current one' in page
    assert f'<span class="vs">vs old base {start}</span>' in page
    chart = _svgs(page)[1]  # the verifier's panel: matplotlib keeps each text as a comment beside its glyphs
    assert f"<!-- left out, measured against an old base (stale): #{m.stale} -->" in chart
    assert "open: improvement" in chart  # the current open PR's bar is drawn
    # with the base unknown nothing is called stale, and the stale PR's bar is drawn like the others
    unknown = summarise(LedgerReader(forge).experiments(), "senpai/target")
    assert not unknown.stale and "left out" not in _svgs(render.html(unknown))[1]
