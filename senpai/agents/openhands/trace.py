"""An agent turn's trace: its LLM calls, the tool calls each asked for, tokens and dollars.

The rows come from the SDK's own records: the conversation's combined `Metrics` (one
`ResponseLatency` per LLM call, a `TokenUsage` per call by response id, a `Cost` per call that
LiteLLM priced above zero) and the `ActionEvent`s the turn guard saw (each names the LLM
response that asked for it). The turn logs them as a W&B Table of a run with job_type agent
(`senpai.job.runs.log_agent_turn`); with a W&B key and the `trace` extra installed, Weave
traces the same calls live (`senpai.tracker.weave`).
"""

from dataclasses import dataclass

from senpai.ledger.blocks import TurnUsage
from senpai.tracker.base import RunTable

COLUMNS = ["call", "model", "response_id", "latency_s", "prompt_tokens", "completion_tokens", "dollars", "tools"]
MAX_ROWS = 2_000  # a turn's calls kept in its table (the turn's llm_calls limit bounds it first)
MAX_TOOLS_CHARS = 2_000  # of one row's tool calls


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a turn: the LLM response that asked for it, the tool and its short arguments."""

    response_id: str
    tool: str
    arguments: str


def call_table(metrics, calls: list[ToolCall]) -> RunTable:
    """One row per LLM call of `metrics` (the SDK's `Metrics`), in order: model, response id,
    latency (seconds), prompt and completion tokens, dollars (None when LiteLLM's costs cannot be
    matched to calls: it records no cost for a free call), and the tool calls it asked for."""
    usage = {u.response_id: u for u in metrics.token_usages}
    costs = [c.cost for c in metrics.costs] if len(metrics.costs) == len(metrics.response_latencies) else None
    tools: dict[str, list[str]] = {}
    for c in calls:
        tools.setdefault(c.response_id, []).append(f"{c.tool}({c.arguments})")
    rows = []
    for i, lat in enumerate(metrics.response_latencies[:MAX_ROWS]):
        u = usage.get(lat.response_id)
        asked = "; ".join(tools.get(lat.response_id, []))[:MAX_TOOLS_CHARS]
        rows.append(
            [
                i, lat.model, lat.response_id, round(lat.latency, 3), u.prompt_tokens if u else None,
                u.completion_tokens if u else None, costs[i] if costs else None, asked,
            ]
        )  # fmt: skip
    return RunTable(name="calls", columns=COLUMNS, rows=rows)


def turn_summary(usage: TurnUsage, tool_calls: int) -> dict[str, float]:
    """A turn's spend as a run summary: llm_calls, tokens, dollars, wall_seconds, tool_calls."""
    return {**{k: float(v) for k, v in usage.model_dump().items()}, "tool_calls": float(tool_calls)}
