"""`senpai report` on W&B: a Report and a saved workspace for the project, built with the
`wandb-workspaces` package (the optional `report` extra: `pip install 'senpai[report]'`).

`build_report` and `build_workspace` only build the objects (no request), so they are tested
offline; `WandbTracker.publish_report` saves them, online only.  The package is imported lazily:
without it, `senpai report` still writes its HTML and Markdown, and only publishing raises
ConfigError with the install command.
"""

from types import ModuleType
from typing import Any

from senpai.errors import ConfigError
from senpai.tracker.base import ReportSpec

INSTALL = "pip install 'senpai[report]'  # wandb-workspaces"


def _modules() -> tuple[ModuleType, ModuleType, ModuleType]:
    """(reports.v2, workspaces, expr) of wandb-workspaces. Raises ConfigError if it is not installed."""
    try:
        import wandb_workspaces.expr as expr
        import wandb_workspaces.reports.v2 as wr
        import wandb_workspaces.workspaces as ws
    except ImportError as e:
        raise ConfigError(f"publishing a W&B report needs the wandb-workspaces package ({e}); install it: {INSTALL}") from None
    return wr, ws, expr


def _panels(wr: ModuleType, spec: ReportSpec) -> list[Any]:
    """The same four panels in the report and the workspace: the metric per run, its history, and
    the metric against the PR number (config `pr`, which senpai gives every run)."""
    return [
        wr.BarPlot(title=f"{spec.metric} per run", metrics=[spec.metric], orientation="v"),
        wr.LinePlot(title=f"{spec.metric} over steps", x="Step", y=[spec.metric]),
        wr.ScatterPlot(title=f"{spec.metric} by PR", x=wr.Config("pr"), y=wr.SummaryMetric(spec.metric)),
        wr.ParallelCoordinatesPlot(
            title="params and the metric",
            columns=[
                wr.ParallelCoordinatesPlotColumn(metric=wr.Config("pr")),
                wr.ParallelCoordinatesPlotColumn(metric=wr.SummaryMetric(spec.metric)),
            ],
        ),
    ]


def build_report(spec: ReportSpec, entity: str, project: str) -> Any:
    """A `wandb_workspaces.reports.v2.Report` (not saved): the title, the ledger summary as a
    Markdown block, and a panel grid over the runs tagged `spec.tag`. Raises ConfigError (no package)."""
    wr, _, expr = _modules()
    runset = wr.Runset(
        entity=entity, project=project, name="senpai runs", filters=[expr.Tags().isin([spec.tag])], groupby=["group"]
    )
    return wr.Report(
        entity=entity,
        project=project,
        title=spec.title,
        description=spec.description,
        width="fluid",
        blocks=[
            wr.H1(text=spec.title),
            wr.MarkdownBlock(text=spec.markdown),
            wr.PanelGrid(runsets=[runset], panels=_panels(wr, spec)),
        ],
    )


def build_workspace(spec: ReportSpec, entity: str, project: str) -> Any:
    """A `wandb_workspaces.workspaces.Workspace` (not saved) named after the report, over the runs
    tagged `spec.tag`, grouped by W&B group (one per PR). Raises ConfigError (no package)."""
    wr, ws, expr = _modules()
    return ws.Workspace(
        entity=entity,
        project=project,
        name=spec.title,
        sections=[ws.Section(name="senpai", panels=_panels(wr, spec), is_open=True)],
        runset_settings=ws.RunsetSettings(filters=[expr.Tags().isin([spec.tag])], groupby=[expr.Metric("group")]),
    )
