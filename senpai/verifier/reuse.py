"""Measurement reuse: a tree is trained and scored once per seed, not once per verification.

Every verification against a base measures the same code on the same seeds, and a merge makes
every open PR verify again against the new base: a new base whose tree is the merged candidate's,
and candidates whose trees are often the ones already measured (a params-only PR re-applied on a
base that moved only in its params). A `Verification` records each side's numbers per seed and a
key per side (`baseline_key`, `candidate_key`): a digest of what those numbers depend on (the git
tree measured, the target config, the sealed holdout's fingerprint, the job's environment). A
later verification takes a seed of either side from an earlier block that measured a tree with
the same key, on either side, instead of re-running it, and names that block's PR in
`baseline_reused` or `candidate_reused`. Only blocks the verifier itself posted are read
(`read_experiment` keeps the bot's records only), on the PR being verified and on the PRs the
wrapper names (`--baseline-from`: those that measured the base, and the merge that made it).

For a deterministic target the reused numbers are the ones a re-run would give. For a
nondeterministic one they are a sample of the same baseline, as a fresh run would be; verifications
against one base then share their baseline samples, as experiments against one control do.
"""

import functools
import hashlib
import importlib.metadata
import json
import math
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

from senpai import __version__
from senpai.config.target import TargetConfig
from senpai.errors import NotFound
from senpai.fleet.base import train_gpus
from senpai.job.context import TurnContext
from senpai.job.walls import QUERY_SECONDS
from senpai.ledger.blocks import Verification
from senpai.ledger.experiment import read_experiment
from senpai.verifier.plan import Sample

MAX_SOURCES = 8  # PRs read for earlier baseline seeds: each costs a comments listing if it changed
MAX_HOLDOUT_ENTRIES = 10_000  # a sealed holdout with more files or folders is not fingerprinted: no reuse
MAX_HASHED_BYTES = 256 * 1024**2  # file contents hashed; past this, a file counts by size and mtime
# a Secret volume's own entries, `..data` and `..<timestamp>`, renamed on every update and per pod
KUBELET_INTERNAL = re.compile(r"\.\.(data|\d{4}_\d\d_\d\d_.*)\Z")


def holdout_fingerprint(root: Path) -> str | None:
    """sha256 hex of the sealed holdout at `root`: every folder and file path, file size and, up to
    MAX_HASHED_BYTES in all, file contents (past that, size and mtime in ns). Symlinks are followed,
    to files and to folders (a Kubernetes Secret volume's files are links into `..data`; a folder
    reached twice is hashed by path only). None if it holds over MAX_HOLDOUT_ENTRIES entries, holds
    anything but files and folders (a FIFO, a socket, a device), or cannot be read: such a holdout
    is never reused."""
    h, entries, hashed, seen = hashlib.sha256(), 0, 0, set()
    try:
        for folder, dirs, files in os.walk(root, onerror=_raise, followlinks=True):
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:  # a link back up the tree, or a second way in
                dirs[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            dirs[:] = sorted(d for d in dirs if not KUBELET_INTERNAL.match(d))
            names = sorted(f for f in files if not KUBELET_INTERNAL.match(f))
            entries += len(dirs) + len(names)
            if entries > MAX_HOLDOUT_ENTRIES:
                return None
            h.update(f"dir {Path(folder).relative_to(root)}\0{len(dirs)}\0".encode())
            for name in names:
                path = Path(folder, name)
                # O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; it is refused below
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as f:
                    st = os.fstat(fd)
                    if not stat.S_ISREG(st.st_mode):  # a FIFO, socket or device: no fingerprint, no reuse
                        return None
                    h.update(f"{path.relative_to(root)}\0{st.st_size}\0".encode())
                    if hashed + st.st_size <= MAX_HASHED_BYTES:
                        hashed += st.st_size
                        while chunk := f.read(1 << 20):
                            h.update(chunk)
                    else:
                        h.update(f"mtime {st.st_mtime_ns}\0".encode())
    except OSError:
        return None
    return h.hexdigest()


def holdout_id(root: Path) -> str | None:
    """16 hex digits naming the sealed holdout at `root` (a hash of `holdout_fingerprint`, which
    hashes its contents; None where that is None): the verdicts of one holdout are counted apart
    from a refreshed one's (`experiment.verdicts_by_holdout`)."""
    fingerprint = holdout_fingerprint(root)
    return None if fingerprint is None else hashlib.sha256(f"senpai holdout\0{fingerprint}".encode()).hexdigest()[:16]


def _raise(error: OSError) -> None:
    raise error


def measurement_key(target: TargetConfig, tree: str | None, holdout_dir: Path) -> str | None:
    """sha256 hex of what one side's numbers depend on: the git tree it trains (`tree`, a sha),
    the target config, `holdout_fingerprint(holdout_dir)`, senpai's version (the steps that train
    and score are senpai's code), and the job's environment (`environment()`, plus the score
    interpreter's, `score_environment`, where `holdout.python` is set). Equal keys give
    comparable numbers, whichever side measured them. None if `tree` is None, if the holdout cannot
    be fingerprinted, if `holdout.python` does not say what it runs on, or if the gate compares
    training seconds (`compute.seconds`, the default): seconds measured at another time, under
    another load, are not this run's, so such a target measures both sides in every verification."""
    if target.holdout.compute.seconds or tree is None:
        return None
    holdout = holdout_fingerprint(holdout_dir)
    python = target.holdout.python
    scorer = score_environment(python) if python else None
    if holdout is None or (python and scorer is None):
        return None
    data = {"tree": tree, "target": target.model_dump(mode="json"), "holdout": holdout, "senpai": __version__}
    data["environment"] = environment() | ({"score_python": scorer} if python else {})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


_DISTRIBUTIONS = (
    "import importlib.metadata as m, json, sys; "
    "print(json.dumps([sys.version, sorted([d.metadata['Name'].lower(), d.version] for d in m.distributions() "
    "if d.metadata['Name'])]))"
)


@functools.cache
def score_environment(python: str) -> str | None:
    """What the score step runs on when `holdout.python` is `python`: its version and installed
    distributions, as it reports them (once a process, as `walls.python_paths` asks it); None if
    it does not answer within QUERY_SECONDS (its numbers are then not reused)."""
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    try:
        run = subprocess.run([python, "-I", "-c", _DISTRIBUTIONS], cwd="/", env=env, capture_output=True, timeout=QUERY_SECONDS)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return run.stdout.decode(errors="replace").strip() if run.returncode == 0 and run.stdout.strip() else None


def environment() -> dict[str, object]:
    """What the train and score steps run on, besides the code: the Python version, the installed
    distributions (name -> version) of this interpreter, and the GPUs its train steps hold (`train_gpus`)."""
    return {"python": sys.version, "packages": sorted(installed().items()), "gpus": train_gpus()}


_HEADER = re.compile(r"^(Name|Version):[ \t]*(.*?)\r?$", re.MULTILINE)


def installed() -> dict[str, str | None]:
    """Each installed distribution's lower-cased name -> its version: the `Name` and `Version`
    headers of its METADATA (or PKG-INFO), as `importlib.metadata` reads them. The headers are
    matched in the header block, not parsed as email (0.25 s for 220 distributions, in every
    verification)."""
    out: dict[str, str | None] = {}
    for dist in importlib.metadata.distributions():
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
        fields: dict[str, str] = {}
        for key, value in _HEADER.findall(text.split("\n\n", 1)[0]):
            fields.setdefault(key, value)
        out[fields.get("Name", "").lower()] = fields.get("Version")
    return out


def samples(v: Verification, source: int, side: str = "baseline") -> dict[int, Sample]:
    """Seed -> its `side` sample in `v` ("baseline" or "candidate"), for the seeds whose every
    figure `v` recorded (a failed seed gives none; a guard `v` did not record per seed is missing
    from the sample's guards)."""
    values, seconds, gpu = (getattr(v, f"{side}_{name}") for name in ("values", "seconds", "gpu_seconds"))
    guards_of, compute = getattr(v, f"{side}_guards"), getattr(v, f"{side}_compute")
    n = len(values)
    if any(len(xs) != n for xs in [seconds, gpu, *guards_of.values()]) or len(v.seeds) < n:
        return {}
    compute = compute if len(compute) == n else [None] * n
    out = {}
    for i, seed in enumerate(v.seeds[:n]):
        guards = {name: xs[i] for name, xs in guards_of.items()}
        figures = [values[i], seconds[i], gpu[i], *guards.values()]
        figures += [] if compute[i] is None else [compute[i]]
        if not all(math.isfinite(x) for x in figures) or seconds[i] < 0 or gpu[i] < 0:
            continue  # a failed seed (NaN), or a figure no run gives: measure it again
        out[seed] = Sample(values[i], seconds[i], gpu[i], compute[i], guards, source)
    return out


Keys = dict[str, str | None]  # side -> its measurement key


def reusable(ctx: TurnContext, number: int, keys: Keys, sources: tuple[int, ...]) -> dict[str, dict[int, Sample]]:
    """Side -> seed -> a sample an earlier verification measured for a tree with that side's key in
    `keys` (on either of its sides), read from PR `number` and then `sources` (at most MAX_SOURCES
    PRs in all; the first block to measure a seed gives it). A side whose key is None gets none.
    Raises TransientError on forge faults that outlast retries."""
    out: dict[str, dict[int, Sample]] = {side: {} for side in keys}
    if not any(keys.values()):
        return out
    for pr in list(dict.fromkeys([number, *sources]))[:MAX_SOURCES]:
        try:
            pull = ctx.ledger.handed(pr)  # as the wrapper saw it when it named it: no request
        except NotFound:  # the wrapper named a PR that is gone: nothing to reuse from it
            continue
        for v in read_experiment(pull, ctx.ledger.comments(pull), ctx.forge.login).verifications:
            for measured in ("baseline", "candidate"):
                recorded = getattr(v, f"{measured}_key")
                for side, key in keys.items():
                    if key is not None and recorded == key:
                        for seed, s in samples(v, pr, measured).items():
                            out[side].setdefault(seed, s)
    return out
