"""Render a `Summary` as one self-contained HTML page or as Markdown, from the jinja2 templates in
`senpai/report/templates/`.

HTML: autoescape is on, so every forge or W&B text is escaped; figures are base64 SVG images
(`plots`), links are http(s) only (`summary.safe_url`); no script, no external file, no network.
Markdown: each cell goes through the ledger's `comments.cell` (neutralised, `|`, `[` and `]`
escaped), so a PR title can neither open an HTML block nor break the table nor make a link.
Numbers, durations and dollars use the ledger's formatters too, as PR comments do.
"""

import base64

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from senpai.ledger.comments import cell, count, dollars, duration, number, signed
from senpai.report.summary import Summary
from senpai.tracker.base import ReportSpec

REBUILD = "senpai report --format md"


_ENV = Environment(
    loader=PackageLoader("senpai.report", "templates"),
    autoescape=select_autoescape(["html"], default_for_string=True, default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_ENV.filters.update(md=cell, num=number, signed=signed, secs=duration, dollars=dollars, count=count)
# the Markdown template is not HTML: its cells are escaped by `md`, not by autoescape
_MD_ENV = _ENV.overlay(autoescape=False)


def _img(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def html(s: Summary) -> str:
    """The report as one HTML page (UTF-8 text)."""
    from senpai.report import plots  # matplotlib (~1.5 s): only the page has figures, not the Markdown

    figures = [
        ("Baseline over time", _img(plots.baseline_plot(s))),
        ("Metric per experiment", _img(plots.experiments_plot(s))),
        ("Cost", _img(plots.cost_plot(s))),
    ]
    return _ENV.get_template("report.html").render(s=s, figures=figures, rebuild=REBUILD)


def markdown(s: Summary) -> str:
    """The report as Markdown (for a GitHub issue or a BASELINE.md); its first line says it is a
    cache of the ledger and how to rebuild it."""
    return _MD_ENV.get_template("report.md").render(s=s, rebuild=REBUILD)


def tracker_spec(s: Summary) -> ReportSpec:
    """What the tracker publishes for `s` (a W&B Report and workspace): the Markdown summary and the metric."""
    return ReportSpec(
        title=f"senpai: {s.repo}"[:128],
        description=f"{s.counts['experiments']} experiments, {s.merges} verified merges; {s.better}",
        markdown=markdown(s)[:200_000],
        metric=s.metric or "metric",
    )
