"""What both roles' turns share: secrets out of reach, the LLM, the turn guard, and its report."""

import os
import shlex
import sys
import tempfile
from pathlib import Path

from openhands.sdk import LLM

from senpai.agents.openhands.conversation import TurnResult
from senpai.agents.openhands.llm import make_llm
from senpai.agents.openhands.session import Session
from senpai.agents.openhands.trace import turn_summary
from senpai.agents.openhands.turn_guard import TurnGuard
from senpai.agents.secrets import scrub_environment
from senpai.config.roles import Role
from senpai.job.context import TurnContext
from senpai.job.runs import log_agent_turn
from senpai.job.walls import sandbox, train_python, walls_of
from senpai.ledger import transitions
from senpai.ledger.blocks import BudgetReport
from senpai.ledger.events import Event
from senpai.tracker import weave


def open_session(ctx: TurnContext, role: Role, events: list[Event]) -> tuple[Session, LLM, TurnGuard]:
    """Read the LLM key, scrub every secret from os.environ, and build the turn's session, LLM and guard.

    Raises ConfigError if the role's LLM has no key and no custom base URL.
    """
    runtime = getattr(ctx.harness.runtime, role)
    api_key = runtime.llm.api_key()
    weave.start(ctx.harness.tracker)
    scrub_environment(ctx.harness, [runtime.llm.api_key_env])
    guard = TurnGuard(runtime.turn)
    llm = make_llm(runtime, role, api_key)
    session = Session(ctx=ctx, role=role, usage=guard.usage, events=events)
    return session, llm, guard


def walled_tools(ctx: TurnContext, workspace: Path, role: Role) -> dict[str, dict]:
    """The params of the role's workspace tools (`conversation.run_turn`) by tool name: the student's
    `terminal` and `file_editor`, the advisor's `file_editor` alone (it reads code; a shell schema
    costs about 1,000 prompt tokens a call, measured in bench/results/e2e-llm-*). Both are behind the
    wall of code from a PR (`senpai.job.walls`: they may write `workspace` and a fresh HOME and
    TMPDIR alone, read nothing of senpai's, hold no key and cannot reach this process; the student's
    may run the train command's own interpreter, `walls.train_python`, which its job checked before
    the turn, as the train step may). The terminal's shell is a script outside `workspace`, where
    the agent cannot change it; the editor is a process of its own (`senpai.agents.openhands.editor`)."""
    root = Path(tempfile.mkdtemp(prefix="shell-", dir=ctx.workdir))
    own, env = sandbox(root)
    python = train_python(ctx.target.train) if role == Role.STUDENT else None
    wall = walls_of(ctx.harness)([workspace, *own], [], python)
    script = root / "bash"
    script.write_text("#!/bin/sh\nexec " + shlex.join(wall.argv(["/bin/bash"])) + ' "$@"\n')
    script.chmod(0o755)
    # `python` in the shell is the interpreter running senpai (the target's, as for its commands)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    editor = {"file_editor": {"wall": wall.to_json(), "env": env}}
    return editor if role == Role.ADVISOR else {"terminal": {"shell_path": str(script), "env": env}, **editor}


def log_turn(ctx: TurnContext, role: Role, pr: int | None, revision: str, key: str, guard: TurnGuard, result: TurnResult) -> None:
    """Log the turn as a W&B run (job_type agent): its spend as the summary, its calls as a table."""
    if result.calls is not None:
        log_agent_turn(ctx, role, pr, revision, key, turn_summary(result.usage, len(guard.calls)), result.calls)


def conversations_dir(ctx: TurnContext, role: Role) -> Path:
    """Conversation state lives under the harness state dir (the shared volume), so a resumed job finds it."""
    return Path(ctx.harness.state_dir) / "conversations" / role


def post_budget_report(
    s: Session, guard: TurnGuard, result: TurnResult, pr: int | None, revision: str, known: str, missing: str
) -> int:
    """Post the structured report (`senpai-budget`) of a turn its turn guard stopped (the ledger redacts it); returns
    the issue/PR number."""
    r = BudgetReport(
        role=s.role,  # type: ignore[arg-type]
        pr=pr,
        revision=revision,
        exhausted=result.exhausted,
        spent=result.usage,
        limits=guard.limits(),
        known=known,
        missing=missing,
        tried=result.tried,
        needed=guard.needed(),
    )
    return transitions.report_budget(s.ctx.forge, r)
