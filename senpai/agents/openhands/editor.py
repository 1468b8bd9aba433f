"""The agent's file editor, run behind the same wall as its terminal.

The SDK's file editor opens the paths the agent names. In the job's own process it would open them
with the job's reach: a path checked inside the work copy can be swapped for a link to a key file
or the sealed holdout (by a process the agent left running in its terminal) between the check and
the open. So the editor runs in a process of its own behind the wall (`senpai.fleet.wall`): it may
write the work copy alone and sees none of senpai's folders, whatever the path resolves to when it
is opened. One process serves a turn (it keeps the editor's undo history); each action is one JSON
line in, one observation line out.

    python -I -m senpai.agents.openhands.editor WORKSPACE    # behind the wall; stdin/stdout
"""

import os
import subprocess
import sys
import threading
from pathlib import Path

from openhands.sdk.tool import ToolExecutor
from openhands.tools.file_editor import FileEditorAction, FileEditorObservation

from senpai import startup
from senpai.fleet.wall import Wall
from senpai.job.environ import allowed_env

MAX_LINE = 32 * 1024**2  # one observation, bytes: a viewed file is cut well below this by the SDK
TIMEOUT = 120.0  # seconds for one action


class WalledEditor(ToolExecutor):
    """The file editor's executor, forwarding each action to the editor process behind `wall`
    (started at the first action, and again after a failure). A failure is an error observation:
    the agent's turn goes on."""

    def __init__(self, workspace: str, wall: Wall, env: dict[str, str]) -> None:
        self.workspace, self.wall, self.env = workspace, wall, env
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        argv = self.wall.argv([sys.executable, "-I", "-m", __name__, self.workspace])
        env = {**allowed_env(os.environ), **self.env}
        startup.apply(env)  # no network fetch, no banner at the editor's imports
        return subprocess.Popen(
            argv, cwd=self.workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def __call__(self, action, conversation=None) -> FileEditorObservation:  # noqa: ARG002 - the SDK's signature
        try:
            self.proc = self.proc if self.proc and self.proc.poll() is None else self._start()
            line = _exchange(self.proc, action.model_dump_json().encode() + b"\n")
            return FileEditorObservation.model_validate_json(line)
        except (OSError, ValueError, TimeoutError) as e:
            self.close()
            text = f"the file editor failed ({e}); try again"
            return FileEditorObservation.from_text(text, is_error=True, command=action.command, path=action.path)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _exchange(proc: subprocess.Popen, request: bytes) -> bytes:
    """Send one request line, read one answer line (at most MAX_LINE bytes, TIMEOUT seconds)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request)
    proc.stdin.flush()
    answer: list[bytes] = []
    reader = threading.Thread(target=lambda: answer.append(proc.stdout.readline(MAX_LINE + 1)), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(TIMEOUT)
    if reader.is_alive():
        raise TimeoutError(f"no answer in {TIMEOUT:.0f} s")
    line = answer[0] if answer else b""
    if not line.endswith(b"\n"):
        raise ValueError("the editor process ended or answered more than a line can hold")
    return line


def serve(workspace: str) -> None:
    """The editor process: one FileEditorAction per stdin line, one FileEditorObservation per stdout
    line. Whatever else the SDK prints goes to stderr."""
    from openhands.tools.file_editor.impl import FileEditorExecutor

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    executor = FileEditorExecutor(workspace_root=workspace)
    for line in sys.stdin.buffer:
        action = FileEditorAction.model_validate_json(line)
        try:
            observation = executor(action)
        except Exception as e:  # noqa: BLE001 - what the wall refuses (PermissionError...) is the agent's answer
            observation = FileEditorObservation.from_text(f"{type(e).__name__}: {e}", is_error=True, command=action.command)
        out.write(observation.model_dump_json().encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    serve(str(Path(sys.argv[1]).resolve()))
