"""The table of an agent turn's calls, built from the SDK's own metrics and the tool calls the
turn guard saw (`senpai.agents.openhands.trace`)."""

from senpai.agents.openhands.trace import COLUMNS, ToolCall, call_table, turn_summary
from senpai.ledger.blocks import TurnUsage


def metrics(*calls: tuple[str, int, int, float]):
    """The SDK's real Metrics after LLM calls (response id, prompt tokens, completion tokens, dollars),
    recorded as its telemetry records them (a free call records no cost)."""
    from openhands.sdk.llm.utils.metrics import Metrics

    m = Metrics(model_name="scripted")
    for rid, prompt, completion, dollars in calls:
        m.add_response_latency(0.25, rid)
        m.add_token_usage(prompt, completion, 0, 0, 0, response_id=rid)
        if dollars:
            m.add_cost(dollars)
    return m


def test_one_row_per_llm_call_with_its_tokens_dollars_and_tool_calls():
    m = metrics(("r0", 100, 10, 0.01), ("r1", 200, 20, 0.02), ("r2", 300, 5, 0.03))
    calls = [ToolCall("r0", "terminal", '{"command": "ls"}'), ToolCall("r0", "file_editor", "{}"), ToolCall("r2", "finish", "{}")]
    table = call_table(m, calls)
    assert (table.name, table.columns) == ("calls", COLUMNS)
    assert table.rows == [
        [0, "scripted", "r0", 0.25, 100, 10, 0.01, 'terminal({"command": "ls"}); file_editor({})'],
        [1, "scripted", "r1", 0.25, 200, 20, 0.02, ""],
        [2, "scripted", "r2", 0.25, 300, 5, 0.03, "finish({})"],
    ]


def test_dollars_are_left_out_when_litellm_priced_only_some_calls():
    """A free call records no cost: the costs can no longer be matched to calls, the total stays in the summary."""
    table = call_table(metrics(("r0", 1, 1, 0.0), ("r1", 2, 2, 0.5)), [])
    assert [row[6] for row in table.rows] == [None, None] and [row[4] for row in table.rows] == [1, 2]


def test_a_turn_with_no_call_has_an_empty_table_and_its_summary_counts_tool_calls():
    assert call_table(metrics(), []).rows == []
    usage = TurnUsage(llm_calls=3, tokens=635, dollars=0.06, wall_seconds=1.5)
    assert turn_summary(usage, 2) == {"llm_calls": 3.0, "tokens": 635.0, "dollars": 0.06, "wall_seconds": 1.5, "tool_calls": 2.0}
