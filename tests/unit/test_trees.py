"""Trees that code from a PR wrote, copied and removed by senpai (senpai.trees): never through a link,
bounded, however the tree changes under the copy and however deep it is."""

import os
import threading
from pathlib import Path

import pytest

from senpai.trees import Limits, copy, remove

LIMITS = Limits(entries=1000, bytes=1024**2)
SECRET = "ghp_the-jobs-own-key-0123456789"


def _tree(root: Path) -> Path:
    (root / "src" / "sub").mkdir(parents=True)
    (root / "src" / "train.py").write_text("print(1)\n")
    (root / "src" / "sub" / "data.json").write_text("{}")
    (root / "secret").write_text(SECRET)
    return root / "src"


@pytest.mark.parametrize("links, kept", [("keep", True), ("skip", False)])
def test_a_link_is_copied_as_a_link_or_left_out_never_followed(tmp_path, links, kept):
    src = _tree(tmp_path)
    (src / "key").symlink_to(tmp_path / "secret")
    (src / "gh").symlink_to(tmp_path)  # a folder link: never entered
    why, skipped = copy(src, tmp_path / "dst", LIMITS, links=links)
    assert why is None and skipped == (0 if kept else 2)
    assert (tmp_path / "dst" / "key").is_symlink() == kept and (tmp_path / "dst" / "gh").is_symlink() == kept
    assert not [p for p in (tmp_path / "dst").rglob("*") if p.is_file() and not p.is_symlink() and SECRET in p.read_text()]
    assert (tmp_path / "dst" / "sub" / "data.json").read_text() == "{}"


def test_a_link_fifo_or_too_much_refuses_a_strict_copy(tmp_path):
    src = _tree(tmp_path)
    (src / "key").symlink_to(tmp_path / "secret")
    assert "key is a symlink" in copy(src, tmp_path / "a", LIMITS)[0]
    (src / "key").unlink()
    os.mkfifo(src / "pipe")
    assert "pipe is not a regular file" in copy(src, tmp_path / "b", LIMITS)[0]  # and it did not block
    (src / "pipe").unlink()
    assert "past the 5 bytes" in copy(src, tmp_path / "c", Limits(entries=100, bytes=5))[0]
    assert "more than 2 entries" in copy(src, tmp_path / "d", Limits(entries=2, bytes=100))[0]
    assert copy(src, tmp_path / "e", LIMITS) == (None, 0)


def test_a_tree_deeper_than_python_recurses_is_refused_by_copy_and_removed_whole(tmp_path):
    deep = tmp_path / "deep"
    deep.mkdir()
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(1100):  # shutil.rmtree's recursion gives out near 1,000; the path grows past PATH_MAX
        os.mkdir("d", dir_fd=fd)
        fd, parent = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(parent)
    os.close(os.open("model.json", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)
    assert "more than 64 folders deep" in copy(deep, tmp_path / "copy", LIMITS)[0]
    remove(deep)
    assert not deep.exists()
    remove(tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


def test_a_file_swapped_for_a_link_during_copies_never_yields_its_target(tmp_path):
    """The red team's race against an agent's submission: a process of the agent's swaps a file of
    its work copy for a link to a file the job can read, between the listing and the open."""
    src = _tree(tmp_path)
    for i in range(200):
        (src / f"f{i:03d}.txt").write_text("mine")
    stop = threading.Event()

    def swap() -> None:  # f199.txt: a file, then a link to the secret, then a file again
        victim, link, plain = src / "f199.txt", src / ".link", src / ".plain"
        while not stop.is_set():
            link.unlink(missing_ok=True)
            link.symlink_to(tmp_path / "secret")
            link.replace(victim)
            plain.write_text("mine")
            plain.replace(victim)

    racer = threading.Thread(target=swap, daemon=True)
    racer.start()
    try:
        for n in range(40):
            dst = tmp_path / f"dst{n}"
            copy(src, dst, Limits(entries=10_000, bytes=1024**2), links="keep", others="skip")
            leaked = [p for p in dst.rglob("*") if p.is_file() and not p.is_symlink() and p.read_text() == SECRET]
            assert not leaked, leaked
    finally:
        stop.set()
        racer.join()
