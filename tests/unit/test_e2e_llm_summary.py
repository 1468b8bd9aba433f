"""The pure logic of the real-model lane (bench/e2e_llm.py, `make e2e-llm`): what the proxy keeps of
one llama-server reply, and the per-role summary; no server, no model."""

import importlib.util
import json
from pathlib import Path

spec = importlib.util.spec_from_file_location("e2e_llm", Path(__file__).resolve().parents[2] / "bench" / "e2e_llm.py")
e2e_llm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(e2e_llm)

TOOLS = [{"type": "function", "function": {"name": n}} for n in ("create_hypothesis", "finish")]


def reply(tool: str | None, content: str | None, prompt: int, completion: int, cached: int) -> bytes:
    message = {"role": "assistant", "content": content}
    if tool:
        message["tool_calls"] = [{"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}]
    return json.dumps(
        {
            "id": f"chatcmpl-{prompt}",
            "choices": [{"message": message}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
            "timings": {"cache_n": cached, "prompt_n": prompt - cached, "prompt_ms": 1000.0, "predicted_n": completion},
        }
    ).encode()


def request(role: str) -> dict:
    return {"model": f"e2e-{role}", "messages": [{}, {}], "tools": TOOLS, "tool_choice": "required", "max_completion_tokens": 64}


def test_a_call_row_keeps_the_tool_calls_usage_and_the_server_cache_figures():
    row = e2e_llm.call_row(request("advisor"), 200, reply("create_hypothesis", None, 9300, 120, 0), 205.04)
    assert row["tool_calls"] == ["create_hypothesis"] and row["tools_offered"] == ["create_hypothesis", "finish"]
    assert (row["prompt_tokens"], row["completion_tokens"], row["cache_n"], row["prompt_n"]) == (9300, 120, 0, 9300)
    assert (row["seconds"], row["tool_choice"], row["max_tokens"], row["response_id"]) == (205.0, "required", 64, "chatcmpl-9300")


def test_a_reply_without_a_tool_call_keeps_the_head_of_its_text_and_an_error_body_its_message():
    text = "```json\n" + '{"name": "create_hypothesis"}  ' * 20 + "\n```"
    row = e2e_llm.call_row(request("student"), 200, reply(None, text, 100, 50, 90), 3.0)
    assert row["tool_calls"] == [] and row["content_head"].startswith('```json {"name"') and len(row["content_head"]) == 200
    bad = e2e_llm.call_row(request("student"), 500, b'{"error": {"message": "Failed to parse input"}}', 1.0)
    assert bad["status"] == 500 and "Failed to parse input" in bad["content_head"] and bad["prompt_tokens"] is None
    assert e2e_llm.call_row(request("student"), 502, b"not json", 1.0)["content_head"] == ""


def test_the_summary_groups_calls_by_the_role_the_model_name_carries_and_renders_one_row_per_call():
    calls = [
        e2e_llm.call_row(request("advisor"), 200, reply("create_hypothesis", None, 9300, 120, 0), 205.0),
        e2e_llm.call_row(request("advisor"), 200, reply("finish", None, 9500, 30, 9300), 10.0),
        e2e_llm.call_row(request("student"), 200, reply(None, "I will train", 8000, 20, 0), 150.0),
    ]
    table = [  # senpai's rows, matched by response id, whatever their order
        {"model": "openai/e2e-advisor", "response_id": "chatcmpl-9500", "latency_s": 9.9, "tools": "finish({...})"},
        {"model": "openai/e2e-advisor", "response_id": "chatcmpl-9300", "latency_s": 204.9, "tools": "create_hypothesis({...})"},
    ]
    summary = e2e_llm.summarize(calls, table, {"hypothesis_prs": ["#1 open: 'x'"]})
    adv, stu = summary["roles"]["advisor"], summary["roles"]["student"]
    assert adv["tool_calls"] == ["create_hypothesis", "finish"] and adv["calls_without_tool"] == 0
    assert adv["prompt_tokens"] == [9300, 9500] and adv["cached_prompt_tokens"] == [0, 9300] and adv["seconds"] == [205.0, 10.0]
    assert adv["llm_calls"] == adv["llm_calls_senpai"] == 2 and adv["senpai_latency_s"] == [204.9, 9.9]
    assert stu["tool_calls"] == [] and stu["calls_without_tool"] == 1 and stu["llm_calls_senpai"] == 0
    assert stu["senpai_tools"] == [None]  # no row of senpai's for that call
    unmatched = e2e_llm.summarize(calls[:2], [{**row, "response_id": None} for row in table], {})
    assert unmatched["roles"]["advisor"]["senpai_tools"] == ["finish({...})", "create_hypothesis({...})"]  # in order
    md = e2e_llm.render_md(summary, "# run")
    assert "| advisor | 1 | 10.0 | 9500 | 9300 | 30 | finish({...}) |" in md
    assert "| student | 0 | 150.0 | 8000 | 0 | 20 | - |" in md
    assert "- student: 1 LLM calls (0 in senpai's table), tool calls none; 2 tools offered per request" in md
    assert "- hypothesis_prs: [\"#1 open: 'x'\"]" in md


def test_a_tool_call_cell_is_one_line_with_its_pipes_escaped_and_cut():
    assert e2e_llm.cell('terminal({"command": "env | sort\nls"})') == 'terminal({"command": "env \\| sort ls"})'
    assert e2e_llm.cell("x" * 500, limit=20) == "x" * 17 + "..."


def test_the_role_is_the_model_name_after_the_provider_and_the_e2e_prefix():
    assert e2e_llm.role_of("openai/e2e-advisor") == "advisor" and e2e_llm.role_of("e2e-student") == "student"
    assert e2e_llm.role_of(None) == "?"


def test_the_prompt_parts_are_each_message_text_and_each_tool_schema():
    body = {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "You are "}, {"type": "text", "text": "the advisor"}]},
            {"role": "user", "content": "student ada is idle"},
            {"role": "user", "content": None},
        ],
        "tools": TOOLS,
    }
    parts = e2e_llm.prompt_parts(body)
    assert list(parts) == ["system 1", "user 1", "user 2", "tool create_hypothesis", "tool finish"]
    assert parts["system 1"] == "You are the advisor" and parts["user 2"] == ""
    assert json.loads(parts["tool finish"]) == TOOLS[1]


def test_the_chat_template_renders_tools_and_past_calls_as_bare_json():
    jinja2 = __import__("jinja2")
    template = jinja2.Environment().from_string(e2e_llm.TEMPLATE.read_text())
    call = {"id": "c1", "type": "function", "function": {"name": "create_hypothesis", "arguments": '{"plan": "train"}'}}
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "You are the advisor."}]},
        {"role": "user", "content": "student ada is idle"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "opened PR #1"}]},
    ]
    text = template.render(messages=messages, tools=TOOLS, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou are the advisor.\n\n# Tools\n") and text.count("<|im_start|>system") == 1
    system = text.split("<|im_end|>")[0]
    assert [json.loads(line) for line in system.splitlines() if line.startswith("{")] == TOOLS  # one JSON object a tool
    assert '<|im_start|>assistant\n{"name": "create_hypothesis", "arguments": {"plan": "train"}}<|im_end|>' in text
    assert "<|im_start|>user\nTool result:\nopened PR #1<|im_end|>\n<|im_start|>assistant\n" in text and "<tool_call>" not in text
