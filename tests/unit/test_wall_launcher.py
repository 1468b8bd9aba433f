"""The wall's launcher as a value and a program start: `Wall` round-trips through the JSON its argv
carries, is a frozen value, and the launcher starts on the few standard modules it needs (it runs
before every walled command: a train step, each git of a reset, the evaluator, an agent's shell)."""

import subprocess

import pytest

import senpai.fleet.wall as wall_module
from senpai.fleet.wall import Wall

# `dataclasses` imports `inspect` (and `ast`, `dis`, `tokenize`...): more than the launcher's own start-up
NOT_IMPORTED = ("dataclasses", "inspect", "ast", "typing", "pydantic", "senpai")


def test_a_wall_round_trips_through_its_json_and_is_a_frozen_value():
    wall = Wall(writable=("/w",), hidden=("/h",), readable=("/h/python",), uid=1000, gid=1001, landlock=False, isolate=True)
    again = Wall.from_json(wall.to_json())
    assert again == wall and hash(again) == hash(wall) and again is not wall
    assert (again.writable, again.hidden, again.readable, again.uid, again.gid, again.landlock, again.isolate) == (
        ("/w",), ("/h",), ("/h/python",), 1000, 1001, False, True
    )  # fmt: skip
    assert Wall() == Wall(writable=(), hidden=(), readable=(), uid=None, gid=None, landlock=True, isolate=False)
    assert Wall(uid=1) != Wall(uid=2) and Wall() != object() and len({Wall(), Wall(), Wall(isolate=True)}) == 2
    assert repr(Wall(uid=3)) == "Wall(writable=(), hidden=(), readable=(), uid=3, gid=None, landlock=True, isolate=False)"
    with pytest.raises(AttributeError, match="frozen"):
        wall.uid = 0  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        del wall.writable
    assert wall.uid == 1000 and wall.writable == ("/w",)


@pytest.mark.parametrize(
    "text",
    [
        '{"uid": true}',  # a bool is no uid (Python would read it as 1)
        '{"gid": 1.5}',
        '{"uid": -1}',
        '{"writable": "/w"}',  # a string, not a list of paths
        '{"hidden": ["relative"]}',
        '{"readable": [7]}',
        '{"landlock": "false"}',  # truthy: it must not read as "on" or "off" by accident
        '{"isolate": 1}',
        '{"extra": 1}',
        "[]",
    ],
)
def test_a_wall_json_with_a_loose_type_is_refused(text):
    with pytest.raises(ValueError):
        Wall.from_json(text)


def test_the_launcher_imports_no_dataclasses_inspect_or_senpai():
    # the argv callers build, on a command that needs no wall feature, with Python's import log
    argv = Wall(landlock=False).argv(["/bin/true"])
    assert argv[1:3] == ["-I", "-S"] and argv[3] == wall_module.__file__
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert {"json", "ctypes"} <= imported  # the log is read right: the launcher's own imports are there
    assert not [m for m in imported if m.split(".")[0] in NOT_IMPORTED], sorted(imported)


def test_a_reset_to_a_sha_spelled_as_an_option_is_refused_not_read_as_one(tmp_path):
    """`reset_checkout` takes only a full sha: a "sha" `--quiet` is not a flag that turns the reset into
    one to HEAD (which would keep what the checkout holds and call it reset)."""
    from senpai.job.walls import bare_walls
    from senpai.verifier.evaluate import reset_checkout

    repo = tmp_path / "repo"
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True, text=True).stdout  # noqa: E731
    repo.mkdir()
    git("init", "-q")
    (repo / "f").write_text("one\n")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (repo / "f").write_text("changed\n")
    for sha in ("--quiet", "HEAD", git("rev-parse", "HEAD")[:12]):
        with pytest.raises(ValueError, match="full commit sha"):
            reset_checkout(repo, sha, bare_walls(), timeout=60)
    assert (repo / "f").read_text() == "changed\n"  # nothing was reset
    reset_checkout(repo, git("rev-parse", "HEAD").strip(), bare_walls(), timeout=60)
    assert (repo / "f").read_text() == "one\n"
