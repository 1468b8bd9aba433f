"""Rebuild the experiment table from the forge and the tracker alone.

`LedgerReader.experiments()` is a pure function of forge + tracker state.  It caches each PR's
comments by the PR's `updated_at` (any comment, label or push bumps it) and lists only the PRs
updated since its last listing, so a wrapper that re-reads the ledger every tick only fetches what
changed, and each PR's parsed experiment by the PR and its comments, so it only parses what
changed.  The runs of all experiments are read from the tracker at once (`Tracker.get_runs`: one
look at its run folder per read).  The wrapper saves that cache for its jobs (`save`, `load`).
"""

import csv
import hashlib
import hmac
import io
import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from senpai.config.load import open_regular
from senpai.errors import ConfigError
from senpai.forge.base import Comment, ForgeMemo, Issue, PullRequest
from senpai.forge.read import ForgeReader
from senpai.ledger.consistency import Consistency
from senpai.ledger.deltas import base_names, base_params, change, delta
from senpai.ledger.experiment import Experiment, RunSummary, finite_or_none, own_pull, read_experiment
from senpai.ledger.labels import SENPAI
from senpai.tracker.base import RunRecord, Tracker

SETTLE = 2.0  # seconds: forge timestamps are whole seconds (plus a little clock skew)
MAX_SNAPSHOT = 256 * 1024**2  # bytes: a larger ledger snapshot is not loaded (a job reads it whole)
SNAPSHOT_FILE = "ledger-snapshot.json"  # in the harness's state_dir
# when the wrapper wrote its last snapshot (`_Cache.saved_ns`), handed to each job it launches ("none": it
# has none): a job loads that snapshot or a later one, never an older one put back (`handed` reads no forge)
ENV_SNAPSHOT = "SENPAI_LEDGER_SNAPSHOT"

log = logging.getLogger(__name__)


class LedgerReader:
    """Reads experiments (PRs labelled `senpai`) from `forge`, with runs from `tracker`.

    It keeps every PR it listed and the comments it read, each valid while the PR's `updated_at`
    stays, and re-lists only what changed (`Forge.pulls_updated`). `save` and `load` carry that
    cache from the wrapper to its jobs, so a job reads what changed since the wrapper's last
    refresh, not the whole ledger, and do not ask the forge again who the bot is (`Forge.memo`).
    """

    def __init__(self, forge: ForgeReader, tracker: Tracker | None = None, snapshot: "Snapshot | None" = None) -> None:
        self.forge = forge
        self.tracker = tracker
        self.snapshot = snapshot  # where `save` writes and `load` reads; None: neither does anything
        self._comments: dict[int, tuple[str, list[Comment]]] = {}
        self._unsettled: set[int] = set()  # numbers whose thread was read before it settled (key "")
        self._newest: datetime | None = None  # the latest updated_at of `_pulls` (a tick needs it, O(1))
        self._pulls: dict[int, PullRequest] = {}
        self._etag: str | None = None  # of the last listing's first page
        self._dirty = False  # read something since the last `save`
        self._parsed: dict[int, tuple[PullRequest, list[Comment], Experiment]] = {}  # by PR number
        self.pulls: list[PullRequest] = []  # every PR listed so far (any label), oldest first
        self._listed = False  # this process listed the PRs at least once (a snapshot's list is older)
        self.saved: str | None = None  # `saved_ns` of the snapshot `save` last wrote; None: no file holds our cache

    def comments(self, pr: PullRequest | Issue) -> list[Comment]:
        """The comments of a PR or an issue (one cache for both: they share GitHub's numbers),
        re-fetched only when its `updated_at` moved.  Timestamps have whole
        seconds, so a listing made within `SETTLE` seconds of the last update is not reused (a
        second change in that same second would not move `updated_at`): it is asked for again, a
        conditional request the forge answers 304 (free) if nothing changed."""
        cached = self._comments.get(pr.number)
        if cached is None or cached[0] != pr.updated_at.isoformat():
            fetched_at = datetime.now(UTC)
            comments = self.forge.list_comments(pr.number)
            # judged on the forge's clock, which stamped updated_at (ours may run ahead of it)
            settled = (self.forge.answered_at or fetched_at) - pr.updated_at > timedelta(seconds=SETTLE)
            cached = (pr.updated_at.isoformat() if settled else "", comments)
            self._comments[pr.number] = cached
            (self._unsettled.discard if settled else self._unsettled.add)(pr.number)
            self._dirty = True
        return cached[1]

    @property
    def unsettled(self) -> bool:
        """True while a thread was read within SETTLE seconds of its last change (by the forge's
        clock): a change in that same second moves no `updated_at`, and on GitHub no listing's
        answer either (a PR list item counts no comments), so the reader reads it again."""
        return bool(self._unsettled)

    def forget(self, number: int) -> None:
        """Drop the cached comments of `number` (after writing to it)."""
        self._comments.pop(number, None)
        self._unsettled.discard(number)

    def list_pulls(self) -> list[PullRequest]:
        """Every PR, any state or label, oldest first, as `refresh` left them (`refresh` first)."""
        self.refresh()
        return self.pulls

    def listed(self) -> list[PullRequest]:
        """Every PR as this process's last listing left them, without a request once it has listed
        (`refresh` first otherwise: a snapshot's list may predate a PR). For what a turn finds of
        what was there when it started, such as a PR a crashed turn opened; not for what moved since."""
        return self.pulls if self._listed else self.list_pulls()

    def refresh(self, revalidate: bool = False) -> bool:
        """List the PRs updated since the last listing (less `SETTLE` seconds), page by page, into
        `pulls`; True if any changed. One conditional request when nothing changed (a 304, free);
        `revalidate`: sent without the cached ETag (the wrapper's full refresh, which a stuck 304
        must not fool)."""
        since = self._newest - timedelta(seconds=SETTLE) if self._newest else None
        # a 304 is safe even within a second of a change: what the listing does not show (a comment)
        # moves a PR's updated_at to a later second, or is re-read by `comments` (not yet settled)
        page = self.forge.pulls_updated(since, None if revalidate else self._etag)
        self._listed = True
        if page.changed:
            self._pulls.update({p.number: p for p in page.pulls})
            self._newest = max([p.updated_at for p in page.pulls] + ([self._newest] if self._newest else []), default=None)
            self.pulls = sorted(self._pulls.values(), key=lambda p: p.number)
            self._etag = page.etag
            self._dirty = True
        return page.changed

    def pull(self, number: int) -> PullRequest:
        """PR `number` as the forge shows it now: from a `refresh` (one conditional listing, a 304,
        free, when nothing changed since the snapshot a job starts from), else read alone. Raises
        NotFound if the forge has no such PR. GitHub REST: GET .../pulls?sort=updated, and GET
        .../pulls/{n} only for a PR the reader never listed."""
        self.refresh()
        return self._pulls.get(number) or self.forge.get_pull(number)

    def handed(self, number: int) -> PullRequest:
        """PR `number` as the wrapper saw it when it launched this job: from the snapshot this reader
        loaded (or its own last listing), with no request; `pull` (a listing, else GET .../pulls/{n})
        only where neither holds it (no snapshot, or one written before the PR existed). Raises
        NotFound if the forge has no such PR. For what a job was handed (its PR's head, body and
        thread); a write that must not act on a state that moved since reads the PR afresh
        (`Forge.get_pull`) first."""
        return self._pulls.get(number) or self.pull(number)

    def experiment(self, pr: PullRequest) -> Experiment:
        """The experiment of `pr`, with its runs."""
        return self._with_runs([self._parse(pr)])[0]

    def _parse(self, pr: PullRequest) -> Experiment:
        """`read_experiment`, parsed again only when `pr` or its comments differ from the last time
        (it is a pure function of them and the bot's login)."""
        comments = self.comments(pr)
        cached = self._parsed.get(pr.number)
        if cached is not None and cached[0] == pr and cached[1] == comments:
            return cached[2]
        exp = read_experiment(pr, comments, self.forge.login)
        self._parsed[pr.number] = (pr, comments, exp)
        return exp

    def _with_runs(self, exps: list[Experiment]) -> list[Experiment]:
        """`exps` with the runs their evidence names, read from the tracker in one `get_runs`."""
        if self.tracker is None:
            return exps
        ids = [r.id for e in exps if e.hypothesis is not None for ev in e.evidence for r in ev.runs]
        found = self.tracker.get_runs(ids) if ids else {}
        return [e if e.hypothesis is None else e.model_copy(update={"runs": _summaries(e, found)}) for e in exps]

    def experiments(self, state: str = "all", *, relist: bool = True) -> list[Experiment]:
        """Every senpai experiment, oldest PR first: each PR labelled `senpai` that the bot opened
        from this repository (`own_pull`; design §4: senpai adopts no other PR, so no other counts
        against a cap, in a status or in a report). `state`: open, closed or all (forge PR state).
        `relist` False: of the PRs the last `refresh` listed (no listing request)."""
        if relist:
            self.refresh()
        login = self.forge.login
        return self._with_runs([self._parse(p) for p in self._labelled(state) if own_pull(p, login)])

    def foreign(self) -> list[Experiment]:
        """The open PRs labelled `senpai` that the bot did not open from this repository, of the
        last `refresh`: no experiments, each with its `error` saying so (the wrapper blocks them,
        which tells their author). Cost: their threads, as `comments`."""
        login = self.forge.login
        return [self._parse(p) for p in self._labelled("open") if not own_pull(p, login)]

    def _labelled(self, state: str) -> list[PullRequest]:
        return [p for p in self.pulls if SENPAI in p.labels and state in ("all", p.state)]

    def save(self) -> bool:
        """Write the cache to `snapshot.path` (atomically), authenticated with HMAC-SHA256 under
        `snapshot.key`, if anything was read since the last save; True if it wrote. Raises OSError."""
        if self.snapshot is None or not self._dirty:
            return False
        path, key = self.snapshot.path, self.snapshot.key
        # the comment pages of open PRs, which jobs write to: their idempotency re-reads are conditional
        memo = self.forge.memo([p.number for p in self._pulls.values() if p.state == "open"])
        stamp = time.time_ns()
        cache = _Cache(etag=self._etag, pulls=list(self._pulls.values()), comments=self._comments, forge=memo, saved_ns=stamp)
        data = cache.model_dump_json().encode()
        mac = hmac.new(key, data, hashlib.sha256).hexdigest().encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        # a fresh name, created exclusively (mode 0600): a FIFO or a link planted at a guessable
        # temporary name can neither block the wrapper nor redirect its write
        self.saved = None  # until the write lands, the file at `path` is not this reader's cache
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(mac + b"\n" + data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._dirty, self.saved = False, str(stamp)
        return True

    def load(self, expect: str | None = None) -> bool:
        """Start from the cache `save` wrote at `snapshot.path`; True if it did. A missing, oversized
        (over MAX_SNAPSHOT bytes), unreadable or not regular file (`_authentic`), or one whose HMAC
        under `snapshot.key` does not match (not written by a holder of the forge token), is ignored:
        the reader reads the forge. `expect` (`handed_snapshot`): when the wrapper wrote the snapshot
        it launched this job with ("none": it had none); an authentic older one put back in its
        place (a copy kept by student code, or the last one left by a failed write) is ignored too."""
        if self.snapshot is None:
            return False
        path, key = self.snapshot.path, self.snapshot.key
        if not os.path.lexists(path):
            return False
        try:
            snap = _Cache.model_validate_json(_authentic(path, key))  # only a file a holder of the token wrote is parsed
            if expect is not None and not (expect.isdigit() and snap.saved_ns >= int(expect)):
                raise ValueError(f"it is older than the one the wrapper handed this job ({expect}): put back?")
        except (ConfigError, ValueError, MemoryError) as e:
            # a cache: after a new token it no longer verifies, which is expected; the forge is read instead
            log.info("ledger snapshot %s not used (reading the forge instead): %s", path, e)
            return False
        self._etag, self._pulls, self._comments = snap.etag, {p.number: p for p in snap.pulls}, snap.comments
        self._unsettled = {n for n, (key, _) in snap.comments.items() if key == ""}
        self._newest = max((p.updated_at for p in snap.pulls), default=None)
        self.pulls = sorted(snap.pulls, key=lambda p: p.number)
        self.forge.recall(snap.forge)
        # the file holds this cache now: a restarted wrapper hands its jobs this one until it writes anew
        self.saved = str(snap.saved_ns)
        return True


def handed_snapshot(env: Mapping[str, str] = os.environ) -> str | None:
    """When the wrapper wrote the snapshot it launched this job with (ENV_SNAPSHOT; "none": load
    none), or None where the wrapper named none (any authentic snapshot is loaded)."""
    return env.get(ENV_SNAPSHOT, "").strip() or None


def _authentic(path: Path, key: bytes) -> bytearray:
    """What follows the first line of the snapshot at `path` if that line is its HMAC-SHA256 under
    `key`. A regular file only (a FIFO or a link to /dev/zero planted there is refused at once), of
    at most MAX_SNAPSHOT bytes, read once (what is checked is what is parsed) into one buffer: a
    planted file costs a job its size in memory, no copies. Raises ConfigError (the file) or
    ValueError (the HMAC)."""
    with open_regular(path, MAX_SNAPSHOT) as f:
        mac = f.readline(256).rstrip(b"\n")
        digest, data = hmac.new(key, digestmod=hashlib.sha256), bytearray()
        while (chunk := f.read(1 << 20)) and len(data) <= MAX_SNAPSHOT:
            digest.update(chunk)
            data += chunk
    if len(data) > MAX_SNAPSHOT or not hmac.compare_digest(mac, digest.hexdigest().encode()):
        raise ValueError("its HMAC does not match")
    return data


class _Cache(BaseModel):
    etag: str | None
    pulls: list[PullRequest]
    comments: dict[int, tuple[str, list[Comment]]]
    forge: ForgeMemo = ForgeMemo()  # the wrapper's forge identity and branch ETags
    saved_ns: int = 0  # when it was written (time.time_ns): a job handed a later one does not load it


@dataclass(frozen=True)
class Snapshot:
    """Where the wrapper leaves its ledger cache for its jobs, and the key that authenticates it."""

    path: Path
    key: bytes

    @classmethod
    def of(cls, state_dir: str, token: str | None, scope: str) -> "Snapshot | None":
        """`<state_dir>/ledger-snapshot.json`, keyed by the forge token (None without one) and `scope`
        (the forge's URL and repository: a snapshot of another repository does not verify). The
        wrapper and the jobs that talk to the forge hold the token; code a student or an agent wrote
        never does (it runs without credentials), so it cannot write a snapshot a job would load."""
        if not token:
            return None
        key = hashlib.sha256(b"senpai ledger snapshot\0" + scope.encode() + b"\0" + token.encode()).digest()
        return cls(Path(state_dir) / SNAPSHOT_FILE, key)


def _summaries(exp: Experiment, found: dict[str, RunRecord]) -> list[RunSummary]:
    metric = exp.hypothesis.metric.name  # type: ignore[union-attr]
    return [_summary(r.id, found.get(r.id), metric) for ev in exp.evidence for r in ev.runs]


def _summary(run_id: str, rec: RunRecord | None, metric: str) -> RunSummary:
    """The run's state and `metric` (None unless a number); state "missing" if the tracker has no such run."""
    if rec is None:
        return RunSummary(id=run_id, state="missing", metric=None, url=None)
    value = rec.summary.get(metric)
    value = float(value) if isinstance(value, (int, float)) else None
    return RunSummary(id=run_id, state=rec.state, metric=value, url=rec.url)


def ledger_rows(exps: list[Experiment], flags: Consistency | None = None, base: str | None = None) -> list[dict]:
    """Flat, JSON-safe rows (NaN/inf become null): one per experiment.  With `flags`
    (`consistency.check`), column `consistency` is "ok" or the PR's flags joined by "; ".
    `base`: the base branch head now (None: unknown, no delta is marked stale). The verifier's
    columns are those of the verification the PR shows (`deltas.measured`): `verifier_base` is the
    base commit it was measured against, `verifier_vs` names it (`Delta.label`: `vs #2`, `vs old
    base #1`) and `verifier_stale` is true when that base is no longer the current one on a PR not
    merged; `change` is what the PR changed against its base (`deltas.change`, at most 3 items)."""
    names, params = base_names(exps), base_params(exps)
    rows = []
    for e in exps:
        ev = e.evidence[-1] if e.evidence else None
        v = e.verifications[-1] if e.verifications else None
        dv = delta(e, names, base)
        d = e.decision
        rows.append(
            {
                "pr": e.pr,
                "title": e.title,
                "state": e.state,
                "student": e.student,
                "hypothesis": e.hypothesis.hypothesis if e.hypothesis else None,
                "hypothesis_id": e.hypothesis.id if e.hypothesis else None,
                "params": json.dumps(e.hypothesis.params, sort_keys=True) if e.hypothesis else None,
                "change": change(e, params).text() or None,
                "attempts": e.attempts,
                "outcome": ev.outcome if ev else None,
                "metric": e.hypothesis.metric.name if e.hypothesis else None,
                "value": finite_or_none(ev.primary.value) if ev else None,
                "baseline": finite_or_none(ev.primary.baseline) if ev else None,
                "run_id": ev.runs[-1].id if ev and ev.runs else None,
                "run_state": e.runs[-1].state if e.runs else None,
                "verified": v.passed if v else None,
                "verifier_delta": dv.improvement if dv else None,
                "verifier_base": dv.base if dv else None,
                "verifier_vs": dv.label if dv else None,
                "verifier_stale": dv.stale if dv else None,
                "noise_floor": dv.noise_floor if dv else None,
                "verdict": d.verdict if d else None,
                "reason": d.reason if d else None,
                "error": e.error,
            }
        )
        if flags is not None:
            rows[-1]["consistency"] = "; ".join(flags.prs.get(e.pr, [])) or "ok"
    return rows


def to_json(exps: list[Experiment]) -> str:
    """The full ledger as JSON: each experiment with all its blocks and runs, NaN as null."""
    return json.dumps([json.loads(e.model_dump_json()) for e in exps], indent=2, sort_keys=True)


def to_csv(exps: list[Experiment], flags: Consistency | None = None, base: str | None = None) -> str:
    """`ledger_rows` as CSV, with a header row ("" when there is no experiment)."""
    rows = ledger_rows(exps, flags, base)
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()
