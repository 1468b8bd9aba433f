"""One agent turn as an OpenHands conversation: build the agent, run it under the turn guard, and
persist its state per (role, PR, revision) so a resumed turn continues where it stopped.

A turn with an `Expectation` that ends with none of its effects, and without the agent calling
`finish` with a reason, gets one more user message in the same conversation (the expectation's
directive, naming the tool to call) and runs again; if it still achieves nothing its status is
`no_effect`, never `finished`.

The agent's tools are sorted and carry no per-turn text (the file editor's working-directory line
is replaced), the system prefix has no timestamp, and every terminal and file-editor result is
wrapped as untrusted data before it reaches the LLM.
"""

import hashlib
import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from openhands.sdk import Agent, AgentContext, Conversation, Tool
from openhands.sdk.conversation.exceptions import ConversationRunError
from openhands.sdk.conversation.state import ConversationExecutionStatus
from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent
from openhands.sdk.llm import TextContent
from openhands.sdk.llm.exceptions import LLMServiceUnavailableError, LLMTimeoutError
from openhands.sdk.skills import load_skills_from_dir
from openhands.sdk.tool import ToolExecutor, register_tool
from openhands.tools.file_editor import FileEditorObservation, FileEditorTool
from openhands.tools.terminal import TerminalTool

from senpai.agents.openhands.editor import WalledEditor
from senpai.agents.openhands.prompts import ROOT, untrusted
from senpai.agents.openhands.trace import call_table
from senpai.agents.openhands.turn_guard import TurnGuard
from senpai.config.roles import Role
from senpai.errors import TransientError
from senpai.fleet.wall import Wall
from senpai.ledger.blocks import TurnStatus, TurnUsage
from senpai.tracker.base import RunTable

log = logging.getLogger(__name__)
SKILLS_DIR = ROOT / "skills"
STABLE_CWD = "Your work copy's path is given in the user message; file paths must be absolute."


class _Untrusted(ToolExecutor):
    """Wraps another executor: its observation text is marked as untrusted data from `source`."""

    def __init__(self, inner: ToolExecutor, source: str) -> None:
        self.inner, self.source = inner, source

    def __call__(self, action, conversation=None):
        obs = self.inner(action, conversation)
        path = getattr(action, "path", None)
        source = f"{self.source}:{path}" if path else self.source
        return obs.model_copy(update={"content": [TextContent(text=untrusted(source, obs.text, limit=30000))]})

    def close(self) -> None:
        self.inner.close()

    def interrupt(self) -> None:
        self.inner.interrupt()


class _Confined(ToolExecutor):
    """Wraps the file editor's executor: a path that is not inside `root` once every link in it is
    resolved (a symlink the agent's shell planted, pointing at a key file) is refused unread. The
    editor itself runs behind the wall (`WalledEditor`), so a link swapped in after this check
    still reaches nothing of senpai's."""

    def __init__(self, inner: ToolExecutor, root: str) -> None:
        self.inner, self.root = inner, os.path.realpath(root)

    def __call__(self, action, conversation=None):
        path = os.path.realpath(str(getattr(action, "path", "") or self.root))
        if path != self.root and not path.startswith(self.root + os.sep):
            text = f"refused: {action.path} is outside your work copy {self.root} (links resolved)"
            return FileEditorObservation.from_text(text, is_error=True, command=action.command, path=action.path)
        return self.inner(action, conversation)

    def close(self) -> None:
        self.inner.close()


class GuardedTerminalTool(TerminalTool):
    """The SDK terminal (subprocess shell, W&B disabled), its output marked untrusted. Its shell is
    `shell_path` (the turn's walled shell: `senpai.agents.openhands.turn.walled_tools`), with
    `env` (its HOME and TMPDIR) added."""

    name: ClassVar[str] = "terminal"

    @classmethod
    def create(cls, conv_state, **params) -> Sequence["GuardedTerminalTool"]:
        env = {"WANDB_MODE": "disabled", **params.pop("env", {})}
        tools = super().create(conv_state, terminal_type="subprocess", env=env, **params)
        return [t.model_copy(update={"executor": _Untrusted(t.executor, "terminal")}) for t in tools]


class GuardedFileEditorTool(FileEditorTool):
    """The SDK file editor with no per-turn path in its description, run behind `wall` (a Wall as
    JSON, `senpai.agents.openhands.editor`) with `env` added, confined to the work copy, its output
    marked untrusted."""

    name: ClassVar[str] = "file_editor"

    @classmethod
    def create(cls, conv_state, **params) -> Sequence["GuardedFileEditorTool"]:
        wall, env = Wall.from_json(params.pop("wall")), params.pop("env", {})
        out = []
        for t in super().create(conv_state, **params):
            text = t.description.split("\n\nYour current working directory is:")[0] + f"\n\n{STABLE_CWD}"
            root = conv_state.workspace.working_dir
            executor = _Untrusted(_Confined(WalledEditor(root, wall, env), root), "file")
            out.append(t.model_copy(update={"executor": executor, "description": text}))
        return out


register_tool("senpai_terminal", GuardedTerminalTool)
register_tool("senpai_file_editor", GuardedFileEditorTool)
# Replaces the SDK's own system prompt (about 3,000 tokens of coding-assistant advice on git, PRs,
# memory files and code style, measured on a real server: bench/results/e2e-llm-*): the role's
# instructions, the trust rules and program.md follow it (`prompts.system_suffix`).
BASE_PROMPT = """\
You are one role of senpai, a harness that runs an ML research program as pull requests on a target
repository. You act only through the tools you are given; each result comes back as the next
message. Every LLM call and token counts against this turn's limits: combine reads, never repeat a
call whose result you have, and end the turn with `finish` and a short reason as soon as your task
is done or cannot be done."""
DEFAULT_TOOLS = ["FinishTool"]  # not ThinkTool: a call that does nothing still costs a whole prompt


@dataclass(frozen=True)
class Expectation:
    """What a turn is woken to achieve: a result that is no error from one of `tools` (senpai's tools
    that write the ledger), anywhere in its conversation, a run of it that died before a resume
    included; `directive` is the user message sent, once, to a turn that ended without one (it
    names the tool to call, or `finish` with a reason)."""

    directive: str
    tools: frozenset[str]


@dataclass
class TurnResult:
    status: TurnStatus
    usage: TurnUsage
    exhausted: list[str] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    last_message: str = ""
    calls: RunTable | None = None  # the LLM and tool calls (`trace.call_table`)
    made: bool = False  # the conversation holds what its Expectation asked for (False without one)


def conversation_id(key: str, agent: str = "") -> uuid.UUID:
    """Stable id of the conversation of turn `key` (e.g. `student-pr3-a1-<head>`) run by the agent
    `agent` (its system prompt and tool names): a turn whose agent changed (an upgrade) starts a new
    conversation, since the SDK refuses to resume one whose tools were removed."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"senpai:{key}:{hashlib.sha256(agent.encode()).hexdigest()[:16]}")


def turn_key(role: Role, pr: int | None, revision: str, extra: str = "") -> str:
    """`<role>-pr<n>-<revision[:12]>[-<hash of extra>]`: one conversation per (role, PR, revision)."""
    tail = f"-{hashlib.sha256(extra.encode()).hexdigest()[:8]}" if extra else ""
    return f"{role}-pr{pr if pr is not None else 'none'}-{revision[:12]}{tail}"


def skills():
    """The SKILL.md skills under skills/, sorted by name (progressive disclosure via invoke_skill)."""
    if not SKILLS_DIR.is_dir():
        return []
    _, _, agent_skills = load_skills_from_dir(SKILLS_DIR)
    return [agent_skills[k] for k in sorted(agent_skills)]


def run_turn(
    *,
    llm,
    senpai_tools: list[str],
    system: str,
    user: str,
    workspace: Path,
    state_dir: Path,
    key: str,
    guard: TurnGuard,
    walled: dict[str, dict],
    expect: Expectation | None = None,
) -> TurnResult:
    """Run (or resume) the conversation of turn `key` until the agent finishes or the turn guard stops it.
    `walled`: the params of the role's walled workspace tools, `terminal` and/or `file_editor`
    (`turn.walled_tools`). `expect`: what the turn must achieve; a turn that finished without it (in
    this run or one before a resume), and without a reasoned `finish`, is sent `expect.directive`
    and runs once more, then ends `no_effect` if it still has not.

    Raises TransientError if the LLM provider fails after the SDK's retries.
    """
    params = {f"senpai_{name}": p for name, p in walled.items()}
    tools = [Tool(name=n, params=params.get(n, {})) for n in sorted([*params, *senpai_tools])]
    context = AgentContext(skills=skills(), system_message_suffix=system, current_datetime=None)
    agent = Agent(llm=llm, tools=tools, agent_context=context, system_prompt=BASE_PROMPT, include_default_tools=DEFAULT_TOOLS)
    cid = conversation_id(key, "\n".join([BASE_PROMPT, system, *DEFAULT_TOOLS, *(t.name for t in tools)]))
    resumed = (state_dir / cid.hex).is_dir()
    conv = Conversation(
        agent=agent,
        workspace=str(workspace),
        persistence_dir=str(state_dir),
        conversation_id=cid,
        callbacks=[guard],
        visualizer=None,
        delete_on_close=False,
        max_iteration_per_run=10_000,  # the guard's limits bound the turn
    )
    guard.bind(conv)
    try:
        prefix = "This turn was interrupted and is resumed; continue where you stopped.\n\n" if resumed else ""
        conv.send_message(prefix + user)
        if not guard.exhausted:
            conv.run()
        if _achieved_nothing(conv, guard, expect):
            conv.send_message(expect.directive)  # the SDK takes a finished conversation up again
            conv.run()
    except ConversationRunError as e:
        raise TransientError(f"agent turn {key} failed: {_provider_failure(e.original_exception)}") from e
    finally:
        guard.close()
    status: TurnStatus = "budget" if guard.exhausted else _status(conv.state.execution_status)
    result = TurnResult(
        status="no_effect" if _achieved_nothing(conv, guard, expect) else status,
        usage=guard.usage(),
        exhausted=list(guard.exhausted),
        tried=list(guard.tried),
        last_message=_last_agent_text(conv),
        calls=call_table(conv.conversation_stats.get_combined_metrics(), guard.calls),
        made=expect is not None and _made(conv, expect.tools),
    )
    conv.close()
    return result


def _provider_failure(e: BaseException) -> str:
    """What failed, in the terms of senpai's settings: LiteLLM's timeout and connection errors name the
    `llm.` setting to change (the SDK's own text sends the user to file an SDK bug report)."""
    # here, not at import: without the agents extra, the import error must name openhands.sdk (test_lazy_imports)
    from litellm.exceptions import APIConnectionError, InternalServerError, ServiceUnavailableError, Timeout

    kind = type(e).__name__
    first = (str(e).strip().splitlines() or [""])[0][:500]
    if isinstance(e, Timeout | LLMTimeoutError):
        return (
            f"the LLM call timed out on every attempt ({first}): raise the role's llm.timeout (seconds per attempt) "
            "or serve a faster model; a CPU server's first call reads the whole prompt, minutes at 10 tokens/s"
        )
    if isinstance(e, APIConnectionError | ServiceUnavailableError | InternalServerError | LLMServiceUnavailableError):
        return f"the LLM server failed or could not be reached ({kind}: {first}): check the role's llm.base_url and that it is up"
    return f"{kind}: {first}"


def _achieved_nothing(conv, guard: TurnGuard, expect: Expectation | None) -> bool:
    """True if the turn finished (no turn-guard stop) without what `expect` asks and without a `finish`
    call that gives a reason."""
    if expect is None or guard.exhausted or conv.state.execution_status != ConversationExecutionStatus.FINISHED:
        return False
    return not _made(conv, expect.tools) and not _finish_reason(conv)


def _made(conv, tools: frozenset[str]) -> bool:
    """True if the conversation holds a result of one of `tools` that is no error (a refusal is one)."""
    return any(isinstance(e, ObservationEvent) and e.tool_name in tools and not e.observation.is_error for e in conv.state.events)


def _finish_reason(conv) -> str:
    """The message of the agent's closing `finish` call, stripped; "" if it closed otherwise."""
    for event in reversed(list(conv.state.events)):
        if isinstance(event, ActionEvent) and event.tool_name == "finish":
            return str(getattr(event.action, "message", "") or "").strip()
        if isinstance(event, MessageEvent) and event.source == "agent":
            return ""
    return ""


def _status(s: ConversationExecutionStatus) -> TurnStatus:
    if s == ConversationExecutionStatus.FINISHED:
        return "finished"
    return "stuck" if s == ConversationExecutionStatus.STUCK else "error"


def _last_agent_text(conv) -> str:
    """The agent's closing words: its finish message or its last plain message."""
    for event in reversed(list(conv.state.events)):
        if isinstance(event, ActionEvent) and event.tool_name == "finish":
            return str(getattr(event.action, "message", "") or "")
        if isinstance(event, MessageEvent) and event.source == "agent":
            return "".join(c.text for c in event.llm_message.content if isinstance(c, TextContent))
    return ""
