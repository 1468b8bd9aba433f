"""`senpai report` over a ledger built on the Forge fake through senpai's own transitions: one merged,
one closed and one failed experiment.  The HTML has its figures, links and rejected reasons, and no
hostile text raw; the Markdown says it is a cache and holds the table; the W&B Report is built with
its blocks (not saved: there is no server here)."""

import base64
import logging
import re
import sys

import pytest
import yaml
from click.testing import CliRunner
from forge_fixtures import commit_and_push, hypothesis, merged, target_yaml

from senpai.cli.report import report
from senpai.config.harness import TrackerSettings
from senpai.config.target import TargetConfig
from senpai.errors import ConfigError
from senpai.ledger import transitions
from senpai.ledger.blocks import Cost, Decision, Evidence, RunRef, Verification
from senpai.ledger.table import LedgerReader
from senpai.report import render
from senpai.report.summary import summarise
from senpai.tracker.wandb import WandbTracker
from senpai.tracker.wandb_report import build_report, build_workspace

TARGET = target_yaml({"rule": "noise_floor", "min_floor": 0.005})
HOSTILE = "<script>alert('pwned')</script> below the floor | ```senpai-decision"


def _verification(pr: int, head: str, base: str, improvement: float) -> Verification:
    passed = improvement > 0.01
    return Verification(
        pr=pr, candidate=head, baseline=base, metric="acc", direction="maximize", seeds=[0, 1, 2],
        candidate_values=[0.90 + improvement] * 3, baseline_values=[0.89, 0.90, 0.91], candidate_mean=0.90 + improvement,
        baseline_mean=0.90, improvement=improvement, noise_floor=0.01, candidate_seconds=[3.5, 3.5, 3.5],
        baseline_seconds=[3.0, 3.0, 3.0], passed=passed, reason=f"improvement {improvement} vs floor 0.01",
        candidate_compute=[20.0, 20.0, 20.0], baseline_compute=[10.0, 10.0, 10.0],  # e.g. epochs
    )  # fmt: skip


def _experiment(forge, tmp_path, base: str, n: int, value: float | None, verdict: str, reason: str, improvement: float | None):
    """Open experiment `n` (student ada), post its evidence (failed if `value` is None), verify it if
    `improvement` is given, and decide `verdict` through `transitions.decide` (the merge gate)."""
    branch = f"senpai/ada/h{n}"
    head = commit_and_push(forge, tmp_path / "seed", branch, {"params.json": f'{{"width": {16 * n}}}\n'}, start="advisor")
    h = hypothesis(base, f"h{n}", {"width": 16 * n})
    pull = transitions.open_experiment(forge, h, branch, "advisor", f"width {16 * n} <b>bold</b>")
    run = RunRef(id=f"run-{n}", url=f"https://wandb.example/senpai/runs/run-{n}", state="finished")
    ev = Evidence.of(
        h, metric="acc", value=value, failure=None if value is not None else "NaN loss at step 3",
        interpretation="x", pr=pull.number, attempt=1, student="ada", head=head, command="python train.py",
        runs=[run], cost=Cost(wall_seconds=30.0, gpu_seconds=0.0, tokens=1000, dollars=0.25),
    )  # fmt: skip
    transitions.submit_evidence(forge, forge.get_pull(pull.number), ev)
    if improvement is not None:
        transitions.request_verification(forge, forge.get_pull(pull.number))
        transitions.record_verification(forge, forge.get_pull(pull.number), _verification(pull.number, head, base, improvement))
    pull = forge.get_pull(pull.number)
    exp = LedgerReader(forge).experiment(pull)
    target = TargetConfig.model_validate(yaml.safe_load(TARGET))
    d = Decision(pr=pull.number, head=head, verdict=verdict, reason=reason, metric="acc")
    transitions.decide(forge, pull, exp, d, target, forge.branch_sha("advisor"))
    return pull.number


@pytest.fixture
def ledger(fake_forge, tmp_path):
    forge, _ = fake_forge
    base = commit_and_push(
        forge, tmp_path / "seed", "advisor", {"senpai.yaml": TARGET, "params.json": '{"width": 8}\n', "eval.py": "x\n"}
    )
    closed = _experiment(forge, tmp_path, base, 1, 0.91, "close", HOSTILE, improvement=0.002)
    merged = _experiment(forge, tmp_path, base, 2, 0.95, "merge", "beats the floor", improvement=0.05)
    failed = _experiment(forge, tmp_path, forge.branch_sha("advisor"), 3, None, "close", "the run crashed: NaN", improvement=None)
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
    assert "| PR | outcome | student | params | acc | verifier Δ | noise floor | compute (base) | verdict | cost |" in md
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
