"""A local forge for the bench: served in its own process, seeded straight into its SQLite store.

- `serve`: `senpai forge serve` in a process of its own (its memory and CPU are not the caller's);
  with `clock`, on a clock the bench sets (`set_clock`): every time the forge stamps (created,
  updated, closed) is read from that file, so a replay stamps each event with the time the
  programme had it, not the second it was replayed in.
- `seed_pulls`: senpai PRs written straight into the store (over HTTP, 10,000 PRs take an hour):
  a hypothesis body, the labels senpai gives them and the comments the caller renders, as the bot.
- `push_branches`: one commit per branch on top of the seeded `main`, pushed 500 at a time.
- `peak_rss_mib`, `reset_peak_rss`: a process's peak resident memory (VmHWM), and its reset.

`python bench/forge_seed.py CLOCK_FILE forge serve --data DIR` is how `serve` runs the forge on a
clock: senpai's own CLI, with the store's clock read from CLOCK_FILE.
"""

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORE_FILE = "forge.sqlite3"  # the store in a forge's data folder (senpai.forge.localforge.app)


def serve(data: Path, clock: Path | None = None, start: datetime | None = None) -> tuple[subprocess.Popen, str]:
    """`senpai forge serve --data data` in its own process; (process, base URL). With `clock`, on
    the clock in that file, set to `start` (now if None) until `set_clock` moves it: the forge's
    stamps only go forward, so `start` must not be after the first time the bench sets. The bot's
    token is registered first (`forge_fixtures.seed_token`)."""
    from forge_fixtures import seed_token

    seed_token(data)
    prefix = [str(Path(__file__).resolve()), str(clock)] if clock else ["-m", "senpai"]
    if clock:
        set_clock(clock, start or datetime.now(UTC))
    with open(data.parent / f"{data.name}.log", "ab") as log:  # its stderr ("stopped", errors)
        cmd = [sys.executable, *prefix, "forge", "serve", "--data", str(data)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("url: "):
        proc.kill()
        raise RuntimeError(f"the local forge did not start: {line!r} (see {data.parent / f'{data.name}.log'})")
    return proc, line.split(" ", 1)[1].strip()


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)


def set_clock(clock: Path, when: datetime) -> None:
    """From now on the forge serving on `clock` stamps its changes `when` (then a microsecond more each)."""
    tmp = clock.with_name(f".{clock.name}.tmp")
    tmp.write_text(repr(when.timestamp()))
    os.replace(tmp, clock)


def _run_on_clock(clock: Path) -> None:
    from senpai.forge.localforge.store import Store

    def now(self: Store) -> float:  # Store.now, with the clock file's time instead of time.time()
        try:
            t = float(clock.read_text())
        except (OSError, ValueError):
            t = time.time()
        with self._lock:
            self._last = max(t, self._last + 1e-6)
            return self._last

    Store.now = now  # type: ignore[method-assign]


def push_branches(forge, seed: Path, names: list[str]) -> None:
    """One commit per branch on top of `main` of the seed clone `seed` (a PR needs a commit its base
    lacks), pushed to `forge` 500 at a time."""
    from senpai.job.workcopy import IDENTITY

    env = {**os.environ, **IDENTITY, **forge.git_env()}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(seed), *args], env=env, check=True, capture_output=True, text=True).stdout

    tree, parent = git("rev-parse", "main^{tree}").strip(), git("rev-parse", "main").strip()
    refs = [f"{git('commit-tree', tree, '-p', parent, '-m', name).strip()}:refs/heads/{name}" for name in names]
    for i in range(0, len(refs), 500):
        git("push", "-q", forge.clone_url, *refs[i : i + 500])


# records(i, number, student, head, base, open) -> the bodies of PR i's comments, in order
Records = Callable[[int, int, str, str, str, bool], list[str]]


def seed_pulls(store, cfg, forge, seed: Path, prs: int, records: Records) -> None:
    """`prs` senpai PRs written into `store` (the forge's, open or not) as the bot: PR i is student
    i % n's (n = the config's students), the first n (one per student) are open and labelled
    `status:verifying`, the rest closed (`status:review`). Each has a hypothesis body (`h-<i>`, cut
    from the base branch) and the comments `records` renders. An open PR's branch is pushed (its head
    is read from git, `seed` is the seeded clone); a closed one's head is a made-up sha.

    Everything is stamped an hour back, a millisecond apart, as a ledger's PRs are old: the ledger
    reader reads a thread changed in the last 2 s again (`senpai.ledger.table.SETTLE`), so PRs
    stamped the second before the wrapper's first read would be read twice."""
    from research import hand_hypothesis

    from senpai.ledger.transitions import hypothesis_body

    owner, name = cfg.forge.repo.split("/")
    repo = store.repo(owner, name)
    base = forge.branch_sha(cfg.forge.base_branch)
    students = [s.name for s in cfg.students]
    open_n = min(len(students), prs)
    branches = [f"senpai/{students[i % len(students)]}/h-{i}" for i in range(prs)]
    push_branches(forge, seed, branches[:open_n])
    heads = {b: forge.branch_sha(b) for b in branches[:open_n]}
    stamps, start = itertools.count(), time.time() - 3600
    store.now = lambda: start + next(stamps) / 1000  # this object's clock only, while it seeds
    try:
        for i, branch in enumerate(branches):
            student, is_open = students[i % len(students)], i < open_n
            head = heads.get(branch, f"{i:040x}")
            h = hand_hypothesis(f"h-{i}", base).model_copy(update={"student": student})
            pull = {"head_ref": branch, "base_ref": cfg.forge.base_branch, "head_sha": head, "base_sha": base}
            issue = store.create_issue(repo["id"], forge.login, f"h-{i}", hypothesis_body(h), pull)
            store.add_labels(issue, ["senpai", f"student:{student}", "status:verifying" if is_open else "status:review"])
            for body in records(i, issue["number"], student, head, base, is_open):
                store.create_comment(issue, forge.login, body)
            if not is_open:
                store.update_issue(issue["id"], state="closed", closed_at=store.now())
    finally:
        del store.now


def peak_rss_mib(pid: int | str = "self") -> float | None:
    """The peak resident memory (VmHWM) of process `pid` in MiB; None if it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def reset_peak_rss() -> None:
    """Start this process's peak (VmHWM) again from its current RSS (Linux; elsewhere a no-op)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT)]
    _run_on_clock(Path(sys.argv.pop(1)))
    from senpai.cli.main import main

    main()
