"""The openhands agent's file editor runs behind the wall (senpai.agents.openhands.editor): a link in
the work copy that a process of the agent's flips between a folder of its own and a hidden one
(the red team's race against the path check) never yields the hidden file, and edits still work.

Each test imports the OpenHands SDK (several seconds) itself, so collecting the suite does not."""

import subprocess
import sys
from pathlib import Path

import pytest

import senpai
from senpai.config.harness import WallSettings
from senpai.fleet.wall import landlock_abi
from senpai.job.walls import candidate_wall, isolation, sandbox

pytestmark = pytest.mark.skipif(not (isolation() or landlock_abi()), reason="no wall can be built on this machine")
SECRET = "TOPSECRET-oauth-token"


def test_a_link_flipped_under_the_editor_never_reaches_a_hidden_file(tmp_path: Path) -> None:
    from openhands.tools.file_editor import FileEditorAction

    from senpai.agents.openhands.conversation import _Confined
    from senpai.agents.openhands.editor import WalledEditor

    workspace, hidden = tmp_path / "ws", tmp_path / "gh"
    (workspace / "real").mkdir(parents=True)
    hidden.mkdir()
    (hidden / "hosts.yml").write_text(SECRET)
    (workspace / "real" / "hosts.yml").write_text("mine\n")
    own, env = sandbox(tmp_path / "own")
    wall = candidate_wall(WallSettings(), [str(hidden)], [workspace, *own])
    editor = _Confined(WalledEditor(str(workspace), wall, env), str(workspace))
    link = workspace / "link"
    link.symlink_to(workspace / "real")
    # What a process left running in the agent's terminal does: flip the link, holding each target
    # for a random 0-4 ms, so that some views pass the path check and some are refused by it.
    flip = (
        "import os, random, sys, time\n"
        "link, real, hidden = sys.argv[1:4]\n"
        "while True:\n"
        "    for target in (real, hidden):\n"
        "        os.symlink(target, link + '.tmp'); os.replace(link + '.tmp', link)\n"
        "        time.sleep(random.uniform(0, 0.004))\n"
    )
    flipper = subprocess.Popen([sys.executable, "-c", flip, str(link), str(workspace / "real"), str(hidden)])
    answers: list[str] = []
    try:  # until the race has gone both ways several times, or 5000 views
        while len(answers) < 5000 and min(sum("mine" in a for a in answers), sum("refused" in a for a in answers)) < 5:
            answers.append(editor(FileEditorAction(command="view", path=str(link / "hosts.yml"))).text)
    finally:
        flipper.kill()
        flipper.wait()
        editor.inner.close()
    assert not [a for a in answers if SECRET in a]
    assert sum("mine" in a for a in answers) >= 5  # the race was run: views went through, and views were refused
    assert sum("refused" in a for a in answers) >= 5


def test_the_walled_editor_edits_and_undoes_in_the_work_copy(tmp_path: Path) -> None:
    from openhands.tools.file_editor import FileEditorAction

    from senpai.agents.openhands.editor import WalledEditor

    workspace = tmp_path / "ws"
    workspace.mkdir()
    own, env = sandbox(tmp_path / "own")
    editor = WalledEditor(str(workspace), candidate_wall(WallSettings(), [], [workspace, *own]), env)
    try:
        path = str(workspace / "train.py")
        assert not editor(FileEditorAction(command="create", path=path, file_text="lr = 0.1\n")).is_error
        assert not editor(FileEditorAction(command="str_replace", path=path, old_str="0.1", new_str="0.2")).is_error
        assert (workspace / "train.py").read_text() == "lr = 0.2\n"
        assert not editor(FileEditorAction(command="undo_edit", path=path)).is_error  # one process: its history kept
        assert (workspace / "train.py").read_text() == "lr = 0.1\n"
        outside = editor(FileEditorAction(command="create", path=str(tmp_path / "escape.py"), file_text="x"))
        assert outside.is_error and not (tmp_path / "escape.py").exists()
    finally:
        editor.close()


@pytest.mark.skipif(not isolation(), reason="needs a view of its own (namespaces) to hide the clone senpai runs from")
def test_the_walled_editor_runs_when_senpais_clone_is_in_a_hidden_folder(tmp_path: Path) -> None:
    """An editable install in a clone under HOME or /tmp, which the view empties: the editor process
    still imports senpai (its package folder is kept, as the interpreter's are)."""
    from openhands.tools.file_editor import FileEditorAction

    from senpai.agents.openhands.editor import WalledEditor

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("mine\n")
    own, env = sandbox(tmp_path / "own")
    clone = str(Path(senpai.__file__).resolve().parents[1])  # the folder holding the package: hidden as HOME would be
    editor = WalledEditor(str(workspace), candidate_wall(WallSettings(), [clone], [workspace, *own]), env)
    try:
        answer = editor(FileEditorAction(command="view", path=str(workspace / "a.txt")))
        assert not answer.is_error and "mine" in answer.text, answer.text
    finally:
        editor.close()
