"""The report's figures, drawn by matplotlib (Agg, no display) and returned as SVG text.

The page shows each one as `<img src="data:image/svg+xml;base64,...">`: an image cannot run script,
whatever text a figure holds.  Labels are the metric's name (clipped) and PR numbers; mathtext is
off, so a `$` in a name is text.
"""

import io
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from senpai.report.summary import Summary  # noqa: E402

COLORS = {"merged": "#1a7f37", "closed": "#8c959f", "failed": "#cf222e", "open": "#0969da"}
STALE_SHOWN = 6  # PR numbers named in the chart's note on the stale deltas it leaves out
STYLE = {
    "text.parse_math": False,
    "font.size": 11,
    "axes.titlesize": 13,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.fonttype": "path",
    "svg.hashsalt": "senpai",  # the same report twice is the same file
}


@contextmanager
def _figure(rows: int = 1, height: float = 4.0) -> Iterator[tuple[Figure, list]]:
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, 1, figsize=(10, height), squeeze=False, sharex=True)
        try:
            yield fig, [a for (a,) in axes]
        finally:
            plt.close(fig)


def _svg(fig: Figure) -> str:
    out = io.StringIO()
    fig.tight_layout()
    fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#57606a")
    ax.set_xticks([])
    ax.set_yticks([])


def baseline_plot(s: Summary) -> str:
    """Step plot of the baseline (the verifier's holdout mean) after each verified merge, in merge order."""
    with _figure(height=3.6) as (fig, (ax,)):
        ax.set_title("Baseline over time: each verified merge moves it")
        if not s.steps:
            _empty(ax, "no verification yet: the baseline has not been measured")
            return _svg(fig)
        x = list(range(len(s.steps)))
        y = [st.value for st in s.steps]
        ax.step(x + [x[-1] + 0.5], y + [y[-1]], where="post", color=COLORS["merged"], lw=2, label="baseline")
        ax.plot(x, y, "o", color=COLORS["merged"], ms=7, label="verified merge")
        ax.set_xticks(x, ["start" if st.pr is None else f"#{st.pr}" for st in s.steps])
        ax.set_xlabel("merge order (PR that moved the baseline)")
        ax.set_ylabel(f"{s.holdout_metric or s.metric} (holdout)\n{s.holdout_better}")
        ax.legend(loc="best", frameon=False)
        return _svg(fig)


def experiments_plot(s: Summary) -> str:
    """Two panels per PR: the student's validation value (merged, closed, failed, open) against the
    baseline it was measured on; the verifier's holdout improvement (positive = better) against the
    noise floor, each against the base it was measured on, stale ones (against an old base, on a PR
    not merged: `Summary.stale`) left out and named in the title."""
    with _figure(rows=2, height=6.6) as (fig, (top, bottom)):
        top.set_title(f"{s.metric or 'metric'} per experiment ({s.better})")
        if not s.rows:
            _empty(top, "no experiments yet")
            return _svg(fig)
        with_value = [r for r in s.rows if r.value is not None]
        low = min((r.value for r in with_value), default=0.0)  # where a failed attempt's ✕ sits
        for kind in ("merged", "closed", "open"):
            pts = [r for r in with_value if r.outcome == kind]
            if pts:
                top.plot([r.pr for r in pts], [r.value for r in pts], "o", ms=8, color=COLORS[kind], label=kind)
        failed = [r for r in s.rows if r.outcome == "failed" or (r.value is None and r.failure)]
        if failed:
            top.plot(
                [r.pr for r in failed], [low] * len(failed), "x", ms=9, mew=2.5, color=COLORS["failed"], label="failed (no value)"
            )
        based = [r for r in s.rows if r.baseline is not None]
        if based:
            top.step(
                [r.pr for r in based],
                [r.baseline for r in based],
                where="mid",
                color="#24292f",
                lw=1,
                ls="--",
                label="baseline then",
            )
        top.set_ylabel(f"{s.metric} (validation)\n{s.better}")
        if top.get_legend_handles_labels()[0]:
            top.legend(loc="best", frameon=False, ncols=2)

        bottom.set_title("Verifier: improvement on the holdout vs the noise floor" + _left_out(s))
        verified = [r for r in s.rows if r.improvement is not None and not r.stale]  # stale: not comparable
        for r in verified:
            bottom.bar(r.pr, r.improvement, width=0.6, color=COLORS[r.outcome])
            if r.floor is not None:
                bottom.hlines(r.floor, r.pr - 0.4, r.pr + 0.4, colors="#bf8700", lw=2.5, linestyles="--")
        if not verified:
            bottom.text(0.5, 0.5, "nothing verified yet", ha="center", va="center", transform=bottom.transAxes, color="#57606a")
        kinds = sorted({r.outcome for r in verified}, key=list(COLORS).index)
        handles = [Patch(color=COLORS[k], label=f"{k}: improvement") for k in kinds]
        if any(r.floor is not None for r in verified):
            handles.append(Line2D([], [], color="#bf8700", lw=2.5, ls="--", label="noise floor"))
        bottom.axhline(0, color="#24292f", lw=0.8)
        bottom.set_ylabel("improvement\n(positive is better)")
        bottom.set_xlabel("experiment (PR number)")
        bottom.set_xticks([r.pr for r in s.rows], [f"#{r.pr}" for r in s.rows])
        if handles:
            bottom.legend(handles=handles, loc="best", frameon=False)
        return _svg(fig)


def _left_out(s: Summary) -> str:
    """The title's second line naming the stale deltas the chart leaves out; "" when there are none."""
    if not s.stale:
        return ""
    shown = ", ".join(f"#{r.pr}" for r in s.stale[:STALE_SHOWN]) + (", …" if len(s.stale) > STALE_SHOWN else "")
    return f"\nleft out, measured against an old base (stale): {shown}"


def cost_plot(s: Summary) -> str:
    """Stacked seconds per PR by role (student, verifier, advisor); merged PRs' labels are marked ✓."""
    with _figure(height=3.6) as (fig, (ax,)):
        per = s.per_improvement
        note = f" · {per.seconds:,.0f} s per accepted improvement" if per else " · no accepted improvement yet"
        ax.set_title("Cost per experiment" + note)
        if not s.rows:
            _empty(ax, "no experiments yet")
            return _svg(fig)
        x = [r.pr for r in s.rows]
        bottom = [0.0] * len(x)
        for role, color in (("student", "#0969da"), ("verifier", "#bf8700"), ("advisor", "#8250df")):
            h = [getattr(r.spend, f"{role}_seconds") for r in s.rows]
            if any(h):
                ax.bar(x, h, width=0.6, bottom=bottom, color=color, label=role)
                bottom = [b + v for b, v in zip(bottom, h, strict=True)]
        ax.set_xticks(x, [f"#{r.pr} ✓" if r.outcome == "merged" else f"#{r.pr}" for r in s.rows])
        ax.set_xlabel("experiment (PR number; ✓ merged)")
        ax.set_ylabel("seconds")
        if any(bottom):
            ax.legend(loc="best", frameon=False)
        return _svg(fig)
