"""Baseline reuse: a baseline seed is trained and scored once per base, not once per verification.

Every verification against a base measures the same code on the same seeds, and a merge makes
every open PR verify again against the new base. A `Verification` records its baseline's numbers
per seed and a `baseline_key`: a digest of what those numbers depend on (the base commit, the
target config, the sealed holdout's fingerprint, the job's environment). A later verification with the same key takes a
baseline seed from an earlier block instead of re-running it, and names that block's PR in
`baseline_reused`. Only blocks the verifier itself posted are read (`read_experiment` keeps the
bot's records only), on the PR being verified and on the PRs the wrapper names (`--baseline-from`).

For a deterministic target the reused numbers are the ones a re-run would give. For a
nondeterministic one they are a sample of the same baseline, as a fresh run would be; verifications
against one base then share their baseline samples, as experiments against one control do.
"""

import hashlib
import importlib.metadata
import json
import math
import os
import re
import stat
import sys
from pathlib import Path

from senpai import __version__
from senpai.agents.context import TurnContext
from senpai.agents.verifier import Sample
from senpai.config.target import TargetConfig
from senpai.fleet.base import train_gpus
from senpai.ledger.blocks import Verification
from senpai.ledger.experiment import read_experiment

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


def _raise(error: OSError) -> None:
    raise error


def baseline_key(target: TargetConfig, baseline: str, holdout_dir: Path) -> str | None:
    """sha256 hex of what a baseline seed's numbers depend on: the base commit, the target config,
    `holdout_fingerprint(holdout_dir)`, senpai's version (the steps that train and score are
    senpai's code), and the job's environment (`environment()`). Equal keys give comparable baseline
    numbers. None if the holdout cannot be fingerprinted, or if the gate compares training seconds
    (`compute.seconds`, the default): seconds measured at another time, under another load, are
    not this run's, so such a target measures its baseline in every verification."""
    if target.holdout.compute.seconds:
        return None
    holdout = holdout_fingerprint(holdout_dir)
    if holdout is None:
        return None
    data = {"baseline": baseline, "target": target.model_dump(mode="json"), "holdout": holdout, "senpai": __version__}
    data["environment"] = environment()
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


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


def samples(v: Verification, source: int) -> dict[int, Sample]:
    """Seed -> its baseline sample in `v`, for the seeds whose every figure `v` recorded (a
    block from before `baseline_guards` existed, or a failed seed, gives none)."""
    n = len(v.baseline_values)
    per_seed = [v.baseline_seconds, v.baseline_gpu_seconds, *v.baseline_guards.values()]
    if any(len(xs) != n for xs in per_seed) or len(v.seeds) < n:
        return {}
    compute = v.baseline_compute if len(v.baseline_compute) == n else [None] * n
    out = {}
    for i, seed in enumerate(v.seeds[:n]):
        guards = {name: xs[i] for name, xs in v.baseline_guards.items()}
        figures = [v.baseline_values[i], v.baseline_seconds[i], v.baseline_gpu_seconds[i], *guards.values()]
        figures += [] if compute[i] is None else [compute[i]]
        if not all(math.isfinite(x) for x in figures) or v.baseline_seconds[i] < 0 or v.baseline_gpu_seconds[i] < 0:
            continue  # a failed seed (NaN), or a figure no run gives: measure it again
        out[seed] = Sample(v.baseline_values[i], v.baseline_seconds[i], v.baseline_gpu_seconds[i], compute[i], guards, source)
    return out


def reusable(ctx: TurnContext, number: int, key: str | None, sources: tuple[int, ...]) -> dict[int, Sample]:
    """Seed -> a baseline sample an earlier verification with baseline key `key` measured, read
    from PR `number` and then `sources` (at most MAX_SOURCES PRs in all; the first block to
    measure a seed gives it). Empty if `key` is None. Raises TransientError on forge faults that
    outlast retries."""
    if key is None:
        return {}
    out: dict[int, Sample] = {}
    pulls = {p.number: p for p in ctx.ledger.list_pulls()}  # one conditional request for them all
    for pr in list(dict.fromkeys([number, *sources]))[:MAX_SOURCES]:
        if (pull := pulls.get(pr)) is None:  # the wrapper named a PR that is gone: nothing to reuse from it
            continue
        for v in read_experiment(pull, ctx.ledger.comments(pull), ctx.forge.login).verifications:
            if v.baseline_key == key:
                for seed, s in samples(v, pr).items():
                    out.setdefault(seed, s)
    return out
