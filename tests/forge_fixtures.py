"""Pytest fixtures for the local forge: one real server per session, one fresh repository per test.

`local_forge` starts the server on a free 127.0.0.1 port in a thread, registers TOKEN (the bot,
owner of every repository), polls GET /health with a deadline and stops it in `finally`.  The
forge refuses writes without a token: `add_token` makes a collaborator's or an outsider's.
`forge_repo` creates a uniquely named repository owned by
`senpai`, pushes `main` and `advisor` with real git through smart HTTP, and returns
`(GitHubForge, ForgeSettings)`.  The git helpers below (for any Forge, the fake too) are for tests
that push more commits.
"""

import os
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from senpai.config.harness import ForgeSettings
from senpai.forge.github import GitHubForge
from senpai.forge.github.admin import create_repository
from senpai.forge.localforge.server import LocalForgeServer
from senpai.forge.localforge.store import Store
from senpai.forge.port import Forge
from senpai.ledger.blocks import BaselineRef, BudgetRef, Cost, Decision, Evidence, Hypothesis, MetricRef, RunRef, Verification
from senpai.ledger.experiment import Experiment

OWNER = "senpai"
TOKEN = "senpai:local-test-token"  # the bot's token: user `senpai`, role owner (registered by `local_forge`)
BOT_AUTH = {"Authorization": f"token {TOKEN}"}
SEED_FILES = {"README.md": "# target\n", "params.yaml": "lr: 0.1\nepochs: 3\n", "train.py": "print('train')\n"}
_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@localhost",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@localhost",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def seed_token(data: Path) -> None:
    """Before a forge's first start on folder `data`: register the bot's TOKEN (as `local_forge` has it)."""
    if data.exists():
        return
    data.mkdir(parents=True)
    store = Store(data / "forge.sqlite3")
    try:
        store.add_token(OWNER, "owner", TOKEN)
    finally:
        store.close()


@dataclass
class LocalForge:
    """A running local forge: `base_url` for ForgeSettings, `data_dir` where it keeps everything."""

    base_url: str
    data_dir: Path
    server: LocalForgeServer


def wait_healthy(base_url: str, timeout: float = 10.0) -> None:
    """Poll GET /health until it answers 200. Raises RuntimeError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{base_url}/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"local forge at {base_url} not healthy after {timeout} s")
        time.sleep(0.05)


def register_bot(server: LocalForgeServer, token: str = TOKEN) -> LocalForgeServer:
    """Register `token` as a token of the bot `senpai` (role owner); return the server."""
    server.store.add_token(OWNER, "owner", token)
    return server


def add_token(forge: "LocalForge | LocalForgeServer", login: str, role: str = "read") -> str:
    """A new real token for `login` with site-wide `role` ("owner", "collaborator" or "read")."""
    server = forge.server if isinstance(forge, LocalForge) else forge
    return server.store.add_token(login, role)


def collaborator_token(forge: "LocalForge | LocalForgeServer", login: str = "carol") -> str:
    """A token of a human with write access to every repository (author_association COLLABORATOR)."""
    return add_token(forge, login, "collaborator")


def outsider_token(forge: "LocalForge | LocalForgeServer", login: str = "mallory") -> str:
    """A token of a user with no rights beyond opening issues and PRs and commenting (NONE)."""
    return add_token(forge, login, "read")


def user_token(forge: "LocalForge | LocalForgeServer", login: str, role: str = "read") -> str:
    """The fixed token `<login>:local-test-token` of `login`, registered with `role` (TOKEN for the bot)."""
    if login == OWNER:
        return TOKEN
    return (forge.server if isinstance(forge, LocalForge) else forge).store.add_token(login, role, f"{login}:local-test-token")


def as_user(forge: "LocalForge | LocalForgeServer", settings: ForgeSettings, login: str, role: str = "read") -> GitHubForge:
    """The forge as `login` (see `user_token`)."""
    return GitHubForge(settings, user_token(forge, login, role))


def add_collaborator(base_url: str, repo: str, login: str) -> None:
    """PUT /repos/{repo}/collaborators/{login} as the bot (the owner): `login` gets write on `repo`."""
    request = urllib.request.Request(f"{base_url}/repos/{repo}/collaborators/{login}", method="PUT", headers=BOT_AUTH)
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 204


@pytest.fixture(scope="session")
def local_forge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalForge]:
    data_dir = tmp_path_factory.mktemp("localforge")
    server = register_bot(LocalForgeServer(data_dir))
    try:
        server.start()
        wait_healthy(server.url)
        yield LocalForge(server.url, data_dir, server)
    finally:
        server.stop()


def run_git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in `cwd` with a fixed identity and no user config; return stdout. Raises CalledProcessError."""
    full_env = {**os.environ, **_GIT_IDENTITY, **(env or {})}
    proc = subprocess.run(["git", *args], cwd=cwd, env=full_env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def clone(forge: Forge, dest: Path, branch: str | None = None) -> Path:
    """A fresh clone of the forge repository (authenticated through `forge.git_env()`)."""
    args = ["clone", "-q", *(["-b", branch] if branch else []), forge.clone_url, str(dest)]
    run_git(dest.parent, *args, env=forge.git_env())
    return dest


def commit_and_push(
    forge: Forge,
    workdir: Path,
    branch: str,
    files: dict[str, str | None],
    message: str = "change",
    start: str | None = None,
) -> str:
    """Check out `branch` (from `start` if given), write (or delete, for None) files, commit, push; return sha."""
    env = forge.git_env()
    if start is not None:
        run_git(workdir, "fetch", "-q", "origin", env=env)
        run_git(workdir, "checkout", "-q", "-B", branch, f"origin/{start}")
    else:
        run_git(workdir, "checkout", "-q", branch)
    for name, text in files.items():
        path = workdir / name
        if text is None:
            run_git(workdir, "rm", "-q", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    written = [name for name, text in files.items() if text is not None]
    if written:
        run_git(workdir, "add", "--", *written)  # one git for all: a test may write thousands of files
    run_git(workdir, "commit", "-q", "-m", message)
    run_git(workdir, "push", "-q", "origin", branch, env=env)
    return run_git(workdir, "rev-parse", "HEAD")


def seed_repository(forge: Forge, workdir: Path, files: dict[str, str] = SEED_FILES) -> None:
    """Push `files` as the first commit of `main` and `advisor`."""
    workdir.mkdir(parents=True, exist_ok=True)
    run_git(workdir, "init", "-q", "-b", "main")
    for name, text in files.items():
        (workdir / name).write_text(text)
    run_git(workdir, "add", ".")
    run_git(workdir, "commit", "-q", "-m", "seed")
    run_git(workdir, "remote", "add", "origin", forge.clone_url)
    run_git(workdir, "push", "-q", "origin", "main", "main:advisor", env=forge.git_env())
    run_git(workdir, "fetch", "-q", "origin", env=forge.git_env())


def new_repository(base_url: str, workdir: Path, token: str = TOKEN) -> tuple[GitHubForge, ForgeSettings]:
    """Create a uniquely named repository on the forge at `base_url` and seed it."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    settings = ForgeSettings(base_url=base_url, repo=f"{OWNER}/{name}", token_env="SENPAI_TEST_UNSET_TOKEN")
    create_repository(settings, token, name)
    forge = GitHubForge(settings, token)
    seed_repository(forge, workdir)
    return forge, settings


@pytest.fixture
def forge_repo(local_forge: LocalForge, tmp_path: Path) -> tuple[GitHubForge, ForgeSettings]:
    """A fresh repository with `main` and `advisor` (same seed commit); the seed clone is tmp_path/'seed'."""
    return new_repository(local_forge.base_url, tmp_path / "seed")


def hypothesis(base: str, id: str = "h-test", params: dict | None = None, metric: str = "acc", attempts: int = 1) -> Hypothesis:
    """A hypothesis block for student ada against baseline commit `base`."""
    return Hypothesis(
        id=id, hypothesis="a wider layer learns more", rationale="test", plan="train", params=params or {"lr": 0.1},
        metric=MetricRef(name=metric, direction="maximize"), baseline=BaselineRef(commit=base, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=60, attempts=attempts), stop_condition=f"{attempts} attempt(s)", student="ada",
    )  # fmt: skip


def target_yaml(holdout: dict | None = None, **extra) -> str:
    """senpai.yaml of a target that sweeps `width` in params.json and maximizes `acc`, with a holdout
    scored by eval.py (protected): `holdout` adds keys to the holdout section, `extra` to the top."""
    cfg = {
        "name": "t", "train": "python train.py", "metric": {"name": "acc", "direction": "maximize"},
        "params": {"file": "params.json", "space": {"width": {"type": "int", "low": 8, "high": 128}}},
        "holdout": {"command": "python eval.py {artifact} {holdout}", "files": ["eval.py"], "metric": "acc", **(holdout or {})},
        "protected": ["eval.py"], **extra,
    }  # fmt: skip
    return yaml.safe_dump(cfg, sort_keys=False)


def experiment(pr: int, state: str, **fields) -> Experiment:
    """Experiment #`pr` of student ada in `state`, as the ledger reader returns it: no blocks unless
    `fields` (any Experiment field) gives them."""
    base = dict(
        pr=pr, title="t", url="u", branch=f"senpai/ada/h-{pr}", head="a" * 40, student="ada", state=state,
        updated_at="2026-12-01T00:00:00Z", hypothesis=None, evidence=[], verifications=[], decisions=[],
    )  # fmt: skip
    return Experiment(**base | fields)


def merged(pr: int, holdout: float, onto: str, direction: str = "maximize", **fields) -> Experiment:
    """Experiment #`pr` merged the way senpai merges: a passing verification of its head
    (`head-<pr>`) against base commit `onto` (holdout mean `holdout`, base 0.5), a merge decision on
    it, landed on `onto` as merge commit `merge-<pr>`. `fields` as for `experiment`."""
    head = f"head-{pr}"
    v = Verification(
        pr=pr, candidate=head, baseline=onto, metric="acc", direction=direction, seeds=[0], candidate_values=[holdout],
        baseline_values=[0.5], candidate_mean=holdout, baseline_mean=0.5, improvement=abs(holdout - 0.5),
        noise_floor=0.01, passed=True, reason="beats the floor",
    )  # fmt: skip
    d = Decision(pr=pr, head=head, verdict="merge", reason="beats the floor", base=onto, merged_onto=onto, candidate=holdout)
    blocks = dict(head=head, merge_commit=f"merge-{pr}", hypothesis=hypothesis(onto, f"h-{pr}"), verifications=[v], decisions=[d])
    return experiment(pr, "merged", **blocks | fields)


def forge_folder_with_a_pr(
    tmp_path: Path, title: str, reason: str | None = None, id: str = "h-x"
) -> tuple[Path, ForgeSettings, int]:
    """A local forge data folder (its server stopped again) holding one senpai PR of student ada on
    `senpai/ada/<id>`, closed by the bot's decision with `reason` if given; returns (data folder,
    the repository's settings, the PR number)."""
    from senpai.ledger import transitions
    from senpai.ledger.table import LedgerReader

    data = tmp_path / "forge"
    server = register_bot(LocalForgeServer(data)).start()
    try:
        forge, settings = new_repository(server.url, tmp_path / "seed")
        base, branch = forge.branch_sha("advisor"), f"senpai/ada/{id}"
        commit_and_push(forge, clone(forge, tmp_path / "work", "advisor"), branch, {"x.md": "x\n"}, start="advisor")
        pr = transitions.open_experiment(forge, hypothesis(base, id), branch, "advisor", title)
        if reason is not None:
            d = Decision(pr=pr.number, head=pr.head_sha, verdict="close", reason=reason)
            transitions.decide(forge, pr, LedgerReader(forge).experiment(pr), d, None, base)
    finally:
        server.stop()
    return data, settings, pr.number


REPORT_TARGET = target_yaml({"rule": "noise_floor", "min_floor": 0.005})


def holdout_verification(pr: int, head: str, base: str, improvement: float) -> Verification:
    """The verifier's record of `head` against `base`: 3 seeds, a baseline mean of 0.90, noise floor
    0.01 (it passes above it), 3.5 s and 20 epochs per candidate seed, 3 s and 10 per baseline seed."""
    passed = improvement > 0.01
    return Verification(
        pr=pr, candidate=head, baseline=base, metric="acc", direction="maximize", seeds=[0, 1, 2],
        candidate_values=[0.90 + improvement] * 3, baseline_values=[0.89, 0.90, 0.91], candidate_mean=0.90 + improvement,
        baseline_mean=0.90, improvement=improvement, noise_floor=0.01, candidate_seconds=[3.5, 3.5, 3.5],
        baseline_seconds=[3.0, 3.0, 3.0], passed=passed, reason=f"improvement {improvement} vs floor 0.01",
        candidate_compute=[20.0, 20.0, 20.0], baseline_compute=[10.0, 10.0, 10.0],  # e.g. epochs
    )  # fmt: skip


def verified_experiment(
    forge: Forge, tmp_path: Path, base: str, n: int, value: float | None, verdict: str | None, reason: str,
    improvement: float | None,
) -> int:  # fmt: skip
    """Open experiment `n` (student ada, params.json `width` 16 x `n`, cut from `base`) through
    senpai's transitions, post its evidence (failed if `value` is None), verify it against `base` if
    `improvement` is given, and decide `verdict` through `transitions.decide` (the merge gate; None:
    leave it open). Returns its PR number."""
    from senpai.config.target import TargetConfig
    from senpai.ledger import transitions
    from senpai.ledger.table import LedgerReader

    branch = f"senpai/ada/h{n}"
    head = commit_and_push(forge, tmp_path / "seed", branch, {"params.json": f'{{"width": {16 * n}}}\n'}, start="advisor")
    h = hypothesis(base, f"h{n}", {"width": 16 * n})
    pull = transitions.open_experiment(forge, h, branch, "advisor", f"width {16 * n} <b>bold</b>")
    run = RunRef(id=f"run-{n}", url=f"https://wandb.example/senpai/runs/run-{n}", state="finished")
    ev = Evidence.of(
        h, metric="acc", value=value, failure=None if value is not None else "NaN loss at step 3",
        interpretation="x", pr=pull.number, attempt=1, student="ada", head=head, command="python train.py",
        runs=[run], cost=Cost(wall_seconds=30.0, gpu_seconds=0.0, tokens=1000, dollars=0.25),
    )  # fmt: skip
    transitions.submit_evidence(forge, forge.get_pull(pull.number), ev)
    if improvement is not None:
        transitions.request_verification(forge, forge.get_pull(pull.number))
        v = holdout_verification(pull.number, head, base, improvement)
        transitions.record_verification(forge, forge.get_pull(pull.number), v)
    if verdict is not None:
        pull = forge.get_pull(pull.number)
        target = TargetConfig.model_validate(yaml.safe_load(REPORT_TARGET))
        d = Decision(pr=pull.number, head=head, verdict=verdict, reason=reason, metric="acc")
        transitions.decide(forge, pull, LedgerReader(forge).experiment(pull), d, target, forge.branch_sha("advisor"))
    return pull.number


@dataclass(frozen=True)
class MovedBase:
    """A ledger after a merge (`after_a_merge`): the PR numbers and the two bases."""

    start: str  # the base every PR was cut from, before the merge
    base: str  # the base branch head now: the merge commit
    merged: int  # verified against `start` (+0.05), then merged
    stale: int  # verified against `start` before the merge (+0.08), still open
    current: int  # verified against `base` (+0.02), still open


def after_a_merge(forge: Forge, tmp_path: Path) -> MovedBase:
    """On a repository seeded as `fake_forge` or `forge_repo` seed it (a clone at tmp_path/'seed'):
    the base (`width` 8) gets senpai.yaml, PR `merged` (`width` 32) is verified and merged, PR
    `stale` (`width` 64) was verified against the old base and waits, and PR `current` (`width` 80)
    is verified against the merge commit: the open PR with the larger delta is the stale one."""
    files = {"senpai.yaml": REPORT_TARGET, "params.json": '{"width": 8}\n', "eval.py": "x\n"}
    start = commit_and_push(forge, tmp_path / "seed", "advisor", files)
    merged = verified_experiment(forge, tmp_path, start, 2, 0.95, "merge", "beats the floor", improvement=0.05)
    stale = verified_experiment(forge, tmp_path, start, 4, 0.97, None, "", improvement=0.08)
    base = forge.branch_sha("advisor")
    current = verified_experiment(forge, tmp_path, base, 5, 0.96, None, "", improvement=0.02)
    return MovedBase(start=start, base=base, merged=merged, stale=stale, current=current)
