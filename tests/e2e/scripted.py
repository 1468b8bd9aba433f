"""Scripted agent policies for the test LLM server, and helpers to point a harness config at it.

A policy answers each request from what the request shows (events, tool results), so the script
does not depend on how many turns the wrapper happens to launch.
"""

import json
import re
from pathlib import Path

import yaml
from llm_server import call

from senpai.config import safe_yaml

LLM_KEY_ENV = "SCRIPTED_LLM_API_KEY"
LLM_KEY = "sk-scripted-test-key-0123456789"
# The scripted student's code change: train.py's MLP switches from Adam (the default) to L-BFGS.
CODE_CHANGE = "train.py: MLPClassifier(solver='lbfgs') instead of the default Adam"
ADAM = "        random_state=seed,\n"
LBFGS = '        random_state=seed,\n        solver="lbfgs",\n'


def use_openhands(config: Path, base_url: str, turn: dict | None = None, roles=("advisor", "student")) -> None:
    """Switch `roles` of the harness config at `config` to the openhands runtime on the scripted server."""
    cfg = yaml.safe_load(config.read_text())
    runtime = cfg.setdefault("runtime", {})
    for role in roles:
        runtime[role] = {
            "kind": "openhands",
            "llm": {
                "model": f"openai/scripted-{role}",
                "base_url": base_url,
                "api_key_env": LLM_KEY_ENV,
                "input_cost_per_token": 1e-6,
                "output_cost_per_token": 4e-6,
            },
            "turn": turn or {"llm_calls": 12, "wall_seconds": 300},
        }
    config.write_text(safe_yaml.dump(cfg))


def user_text(body: dict) -> str:
    """All user-message text of a request."""
    out = []
    for m in body["messages"]:
        if m["role"] == "user":
            content = m["content"]
            out.append(content if isinstance(content, str) else "".join(c.get("text", "") for c in content))
    return "\n".join(out)


def tool_results(body: dict) -> list[str]:
    out = []
    for m in body["messages"]:
        if m["role"] == "tool":
            content = m["content"]
            out.append(content if isinstance(content, str) else "".join(c.get("text", "") for c in content))
    return out


def workdir(body: dict) -> str:
    return re.search(r"Your work copy: (\S+)", user_text(body)).group(1)


def advisor_policy(body: dict) -> dict:
    """Idle student: open a hypothesis. Review: read the runs, then send to the verifier. Verified: merge."""
    text, done = user_text(body), tool_results(body)
    review = re.search(r"PR #(\d+) is ready for review", text)
    verified = re.search(r"PR #(\d+) has a verification", text)
    idle = re.search(r"student (\S+) has nothing assigned", text)
    if review and len(done) == 0:
        return call("query_runs", pr=int(review.group(1)))
    if review and len(done) == 1:
        return call("decide", pr=int(review.group(1)), verdict="merge", reason="val_accuracy beats the baseline; verify it")
    if verified and not done:
        return call("decide", pr=int(verified.group(1)), verdict="merge", reason="the verifier passed it")
    if idle and not done:
        return call(
            "create_hypothesis",
            student=idle.group(1),
            hypothesis="full-batch L-BFGS fits the small MLP better than Adam in the same 20 epochs",
            rationale="the baseline underfits: 20 Adam epochs leave its loss high, and 1,077 images fit one batch",
            plan="set solver='lbfgs' in train.py's build_model, keep params.json, report val_accuracy",
            change=CODE_CHANGE,
        )
    return call("finish", message=f"done: {json.dumps(done[-1:])[:200]}")


# an agent trying to catch the harness's git credentials: a hook and an fsmonitor command that dump
# their environment into the job's work dir (next to the work copy) if git ever runs them
PLANT_HOOKS = (
    "printf '#!/bin/sh\\nenv >> ../hook-env.txt\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
    " && cp .git/hooks/pre-commit .git/hooks/pre-push && git config core.fsmonitor 'env >> ../fsmonitor-env.txt; false'"
)


BYTECODE_LEFT = "mkdir -p __pycache__ eval/__pycache__ && echo x > __pycache__/train.cpython-312.pyc && echo x > eval/x.pyc"


def student_policy(body: dict) -> dict:
    """Look at the environment and git config, plant git hooks, switch train.py's solver (a code-only
    change) with the file editor, submit."""
    done = tool_results(body)
    wd = workdir(body)
    steps = [
        # the environment in a call of its own: a long output can scroll the terminal's previous
        # prompt out of its capture, and the SDK then shows only the output's last lines
        lambda: call("terminal", command="env | sort"),
        # and the bytecode a run leaves where writing it is on: never part of the submitted change
        lambda: call("terminal", command=f"cat .git/config; git remote -v; {PLANT_HOOKS}; {BYTECODE_LEFT}"),
        lambda: call("file_editor", command="view", path=f"{wd}/train.py"),
        lambda: call("file_editor", command="str_replace", path=f"{wd}/train.py", old_str=ADAM, new_str=LBFGS),
        lambda: call("submit_evidence", interpretation="L-BFGS instead of Adam, same params; expect higher val_accuracy"),
    ]
    return steps[len(done)]() if len(done) < len(steps) else call("finish", message="evidence submitted")
