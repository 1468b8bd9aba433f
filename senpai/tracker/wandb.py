"""The W&B adapter of the tracker port, and the only module in senpai that imports `wandb`.

Identity in (checked against wandb 0.31). `env_for` sets wandb's standard variables, so the
program's own `wandb.init()` (with or without `config=`) logs as senpai's run: WANDB_RUN_ID,
WANDB_RUN_GROUP, WANDB_NAME, WANDB_TAGS, WANDB_JOB_TYPE, WANDB_NOTES, WANDB_PROJECT, WANDB_ENTITY,
WANDB_MODE, WANDB_DIR and WANDB_SILENT; WANDB_GIT_COMMIT and WANDB_GIT_REMOTE_URL make the run's git
information the experiment's (the PR head, the target repository), whatever checkout it runs in.

Installation. An id of 8 hex digits from the harness config (`TrackerSettings.installation_id`):
senpai's run ids end with it (`senpai.job.runs.run_id`), so two installations (two demos, two
clusters) logging to one W&B project never share a run id, and every run's config carries it as
`senpai_installation` (a verdict tags only this installation's runs).

Nothing senpai reads back is kept under the tracker's dir. It is the train command's WANDB_DIR, on
Kubernetes on the shared PVC that student pods mount read-write: a PR's code can put anything there
(garbage, a FIFO, a directory, forged lines). So the installation id comes from the config, never
from a file there (an older senpai kept a random one in `<dir>/senpai-installation`: that file is
no longer read), and offline verdict tags are not queued there: `senpai sync` takes them from the
ledger (`senpai.tracker.wandb_sync`). Nor is a run's config file for WANDB_SWEEP_PARAM_PATH
written there: a FIFO planted at its name would block the next job, a file planted at its folder
would fail every later one.

Config in. The documented WANDB_CONFIG_PATHS cannot be used: wandb 0.31 types
`Settings.config_paths` as `Sequence[str]`, rejects the string it reads from the environment, and
`wandb.init()` raises a pydantic ValidationError. senpai uses WANDB_SWEEP_PARAM_PATH instead. It is
the variable wandb's own sweep agent uses to give a child process its config: a YAML file in
wandb's config format (`key: {value: v}`). wandb merges it *after* `init(config=...)` and locks the
keys, so senpai's values (pr, head, hypothesis id) win any clash with the program's. Setting the
variable without WANDB_SWEEP_ID does not attach the run to a sweep. The file is a fresh
`senpai-config-<run id>-*.yaml` in a folder of the job's own (the student's turn folder).

Runs out, offline. No `wandb-summary.json` is written offline, and 0.31 ships no Python reader for
the `.wandb` transaction log: the old `DataStore` is gone. The Go `wandb leet inspect --json` is a
CLI whose output turns NaN and inf into the strings "NaN" and "Infinity", and importing wandb's
protobuf classes imports all of `wandb` (0.65 s of CPU per job). So `senpai.tracker.wandb_log` reads
the log's LevelDB framing and decodes the few fields of wandb's `Record` that are folded here, with
no `wandb` import: offline, senpai never imports `wandb`. The summary is the replay of the log's
summary records. wandb-core writes one after every `run.log`, holding the last value of each key
(or the `define_metric` aggregate, e.g. `{"max": 0.9}`), and one for each explicit `run.summary`
update. History records are not replayed: that would overwrite those
aggregates with last values. A NaN passed to `run.log` survives as float nan (inf as inf). wandb
itself writes `run.summary[k] = nan` as null, so that value reads back as None.

Which folder is the run. wandb names it `offline-run-<stamp>-<id>[-<n>]`, and a reader takes the
newest. The stamp is only a name, and run ids are predictable: a PR's code can plant a folder of
another PR's run, stamped in the future. So a job reading back the run its own train command just
logged passes the command's time as `window`, and only folders stamped in it count (`in_window`):
one planted before the command started is ignored. One planted while it runs, with a stamp in its
time, is not, nor one per second planted ahead over the command's time (docs/wandb.md).

Runs out, online (WANDB_API_KEY set): `wandb.Api().run("<entity>/<project>/<id>")`.

Runs senpai logs itself (`log_run`: the verifier's holdout numbers, an agent turn's calls) go
through `wandb.init` in this process, so only that job pays the `wandb` import. Verdict tags
(`add_tags`) are set through the W&B API online; offline `senpai sync` adds the ledger's verdicts
once it has uploaded the runs (`senpai.tracker.wandb_sync`). The mode and the key are read when the tracker is built: a job
removes the key from its environment before it runs code from a PR.
"""

import logging
import os
import re
import tempfile
import time
from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from senpai.config import credentials
from senpai.config.harness import TrackerSettings
from senpai.errors import ConfigError, Forbidden, NotFound, TransientError
from senpai.tracker.base import ReportSpec, RunIdentity, RunRecord, RunTable
from senpai.tracker.wandb_log import fold, records

log = logging.getLogger(__name__)

# wandb-core flushes the transaction log every `x_transaction_log_flush_interval` seconds (15 by
# default). A shorter interval means a run killed at its deadline keeps its records up to the last
# second, not its last 15. It is a private setting: versions without it ignore the variable.
FLUSH_SECONDS = "1"
# A run with no exit record whose log was written within this many seconds counts as "running";
# an older one is "unknown" (killed, or lost before its last flush).
LIVE_SECONDS = 60.0
# Runs whose record (finished) or folded log (not finished) a tracker keeps: a few KiB each.
MAX_CACHED_RUNS = 10_000
# A run's transaction log is read whole, in the wrapper too: a larger one is not read (the run's
# own program writes it), and the run reads as if its log were empty (state unknown, no summary).
MAX_LOG_BYTES = 512 * 1024**2
# wandb stamps a run folder with the second its `wandb.init` started, truncated: a run started in
# the window (start, end) has a stamp within it, give or take this many seconds of rounding.
WINDOW_SLACK_SECONDS = 2.0
# Folders outside the window named in its warning; the rest are counted.
MAX_NAMED_FOLDERS = 5
FINAL = frozenset({"finished", "crashed"})  # run states that never change again
INSTALLATION_KEY = "senpai_installation"  # the config key that names a run's installation

OFFLINE_DIR = re.compile(r"^offline-run-(?P<stamp>\d{8}_\d{6})-(?P<id>.+)$")
_DIR_SUFFIX = re.compile(r"^(?P<id>.+)-(?P<n>\d+)$")


def offline_run_id(run_dir: str | os.PathLike) -> tuple[str, str, int] | None:
    """(stamp, run id, collision index) of an `offline-run-<stamp>-<id>[-<n>]` directory, or None
    if the name is not one. wandb adds `-<n>` when a run of the same id started in the same second
    (a retried job); the run's own `run-<id>.wandb` file says which reading is the id."""
    name = os.path.basename(run_dir)
    if not (m := OFFLINE_DIR.match(name)):
        return None
    if (s := _DIR_SUFFIX.match(m["id"])) and os.path.exists(os.path.join(run_dir, f"run-{s['id']}.wandb")):
        return m["stamp"], s["id"], int(s["n"])
    return m["stamp"], m["id"], 0


def in_window(run_id: str, dirs: list[Path], window: tuple[datetime, datetime]) -> list[Path]:
    """The folders among `dirs` (of run `run_id`, in order) whose stamp lies in `window` (start,
    end: datetimes, aware or this process's local time), WINDOW_SLACK_SECONDS wider on each side.

    wandb stamps a folder `datetime.fromtimestamp(time.time()).strftime("%Y%m%d_%H%M%S")`: local
    time, which the train command shares with this process (TZ is passed through to it). A stamp
    repeated by a daylight-saving change counts if either of its two readings is in the window. The
    folders left out are logged at warning, named: a PR's code can write the tracker's dir, and a
    folder stamped outside the train command's own time is one it planted (or a stale one)."""
    lo, hi = window[0].timestamp() - WINDOW_SLACK_SECONDS, window[1].timestamp() + WINDOW_SLACK_SECONDS
    kept, out = [], []
    for d in dirs:
        (kept if _stamped_in(OFFLINE_DIR.match(d.name)["stamp"], lo, hi) else out).append(d)
    if out:
        names = ", ".join(d.name for d in out[:MAX_NAMED_FOLDERS]) + (
            f" and {len(out) - MAX_NAMED_FOLDERS} more" if len(out) > MAX_NAMED_FOLDERS else ""
        )
        log.warning(
            "W&B run %s: ignored %d offline folder(s) stamped outside its train command's time %s to %s"
            " (planted by a PR's code, or stale): %s",
            run_id, len(out), window[0].isoformat(timespec="seconds"), window[1].isoformat(timespec="seconds"), names,
        )  # fmt: skip
    return kept


def _stamped_in(stamp: str, lo: float, hi: float) -> bool:
    try:
        naive = datetime.strptime(stamp, "%Y%m%d_%H%M%S")
        return any(lo <= naive.replace(fold=fold).timestamp() <= hi for fold in (0, 1))
    except (ValueError, OverflowError, OSError):  # not a date (month 13), or out of the platform's range
        return False


_API_STATES = {
    "finished": "finished",
    "failed": "crashed",
    "crashed": "crashed",
    "killed": "crashed",
    "running": "running",
    "pending": "running",
}


class WandbTracker:
    """Tracker over the `wandb` library: offline run directories, or the W&B API when online.
    `installation`: this installation's id (`senpai.cli.wiring.make_tracker` gives the harness
    config's); None: `settings.installation_id()`."""

    def __init__(self, settings: TrackerSettings, installation: str | None = None) -> None:
        self.settings = settings
        self.dir = Path(settings.dir).resolve()
        self.mode = settings.resolved_mode()  # now: a job scrubs the key from os.environ later
        self._key = credentials.get("WANDB_API_KEY")
        self.installation = installation or settings.installation_id()
        self._finished: OrderedDict[str, RunRecord] = OrderedDict()  # final runs by id, least recently read first
        self._live: dict[str, tuple[tuple, dict[str, Any]]] = {}  # id -> ((dir, mtime_ns, size), folded log)
        self.parses = 0  # `.wandb` logs read and folded (offline)

    # ---------------------------------------------------------------- identity in

    def env_for(self, run: RunIdentity, folder: Path) -> dict[str, str]:
        """Env vars under which the program's own `wandb.init()` logs as `run`, offline, into
        `folder` (its WANDB_DIR: a new folder of the command's own; `collect_run` takes the run from
        there into the tracker).

        Writes `run.config` to a new `senpai-config-<id>-*.yaml` in `folder` (created exclusively,
        under a random name, so nothing planted can block or redirect it) and points
        WANDB_SWEEP_PARAM_PATH at it (see the module docstring for why not WANDB_CONFIG_PATHS).
        Raises ConfigError if a tag contains a comma, since WANDB_TAGS is comma-separated, and
        TransientError (senpai's infrastructure, not the hypothesis) if the file cannot be written.
        """
        bad = [t for t in run.tags if "," in t or not t]
        if bad:
            raise ConfigError(f"run {run.id}: tags must be non-empty and comma-free, got {bad!r}")
        env = {
            "WANDB_RUN_ID": run.id,
            "WANDB_RUN_GROUP": run.group,
            "WANDB_NAME": run.name,
            "WANDB_PROJECT": self.settings.project,
            "WANDB_MODE": "offline",  # the command holds no key: `collect_run` uploads what it logged
            "WANDB_DIR": str(folder),
            "WANDB_SILENT": "true",
            "WANDB__TRANSACTION_LOG_FLUSH_INTERVAL": FLUSH_SECONDS,
        }
        optional = {
            "WANDB_TAGS": ",".join(run.tags),
            "WANDB_JOB_TYPE": run.job_type,
            "WANDB_NOTES": run.notes,
            "WANDB_GIT_COMMIT": run.git_commit,
            "WANDB_GIT_REMOTE_URL": run.git_remote,
            "WANDB_ENTITY": self.settings.entity,
        }
        env |= {k: v for k, v in optional.items() if v}
        env["WANDB_SWEEP_PARAM_PATH"] = str(self._write_config(run, folder))
        return env

    def _config(self, run: RunIdentity) -> dict[str, Any]:
        return {**run.config, INSTALLATION_KEY: self.installation}

    def _write_config(self, run: RunIdentity, folder: Path) -> Path:
        doc = {"wandb_version": 1, **{k: {"value": v} for k, v in self._config(run).items()}}
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, path = tempfile.mkstemp(dir=folder, prefix=f"senpai-config-{run.id}-", suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                f.write(yaml.safe_dump(doc, sort_keys=True))
        except OSError as e:
            raise TransientError(f"W&B run {run.id}: cannot write its config file: {e}") from e
        return Path(path)

    def collect_run(self, run_id: str, folder: Path, window: tuple[datetime, datetime]) -> RunRecord:
        """The run `run_id` a train command logged under `folder` (its WANDB_DIR, `env_for`) in
        `window` (its start and end), taken into the tracker: copied into the tracker's dir
        (`wandb_collect.take`: that run's folder alone, its regular files alone), online then
        uploaded into the project with `wandb sync` (this process holds the key; the command never
        did), and read back as `get_run` reads it. Raises NotFound if the command logged no such
        run, TransientError if the copy or the upload fails (senpai's failure, not the run's)."""
        from senpai.tracker.wandb_collect import take

        copied = take(run_id, folder, self.dir, window)
        if self.mode == "online":  # pragma: no cover - needs a W&B server
            from senpai.tracker.wandb_sync import upload

            upload([copied], self.settings.entity, self.settings.project, self._key)
            self._finished.pop(run_id, None)
        return self.get_run(run_id, window)

    # ---------------------------------------------------------------- runs senpai logs

    def log_run(self, run: RunIdentity, summary: dict[str, float], table: RunTable | None = None) -> RunRecord:
        """Log `run` from this process: `summary` as its summary, `table` as a `wandb.Table` under
        `table.name`. A second call with the same id resumes the run (a retried job). Returns the
        run as logged (state finished), with its url online and its folder offline. Raises
        TransientError if W&B cannot be reached or refuses the run (online)."""
        import wandb

        settings = wandb.Settings(
            silent=True, api_key=self._key, git_commit=run.git_commit, git_remote_url=run.git_remote, console="off",
            x_disable_stats=True, x_disable_machine_info=True, x_save_requirements=False,
        )  # fmt: skip
        try:
            with wandb.init(
                id=run.id, project=self.settings.project, entity=self.settings.entity, dir=str(self.dir),
                mode=self.mode, group=run.group, name=run.name, tags=run.tags, job_type=run.job_type,
                notes=run.notes, config=self._config(run), settings=settings, resume="allow", reinit="create_new",
            ) as w:  # fmt: skip
                if table is not None:
                    w.log({table.name: wandb.Table(columns=table.columns, data=table.rows)})
                w.summary.update(summary)
                online = self.mode == "online"
                url, path = (w.url, None) if online else (None, str(Path(w.dir).parent))  # w.url warns offline
            wandb.teardown()  # wait for wandb-core to write the run out: a job may end right after
        except (wandb.errors.Error, OSError) as e:
            raise TransientError(f"W&B run {run.id}: {e}") from e
        return RunRecord(
            id=run.id, name=run.name, group=run.group, tags=run.tags, config=self._config(run), summary=summary,
            state="finished", url=url, path=path, job_type=run.job_type, notes=run.notes, git_commit=run.git_commit,
            git_remote=run.git_remote,
        )  # fmt: skip

    def add_tags(self, group: str, tags: list[str]) -> int:
        """Add `tags` to this installation's runs of `group` (their config's `senpai_installation`).
        Online: through the W&B API, returns the runs tagged. Offline: nothing is written (a file
        beside the runs is one a PR's code could forge); `senpai sync` adds the ledger's verdicts
        once it uploads the runs. Returns 0. Raises TransientError if the W&B API cannot be reached."""
        if self.mode == "online":  # pragma: no cover - needs a W&B server
            return self._api_tag(group, tags)
        return 0

    def _api_tag(self, group: str, tags: list[str]) -> int:  # pragma: no cover - needs a W&B server
        import wandb

        done = 0
        try:
            for r in self._api().runs(self._api_path(), filters={"group": group}):
                if r.config.get(INSTALLATION_KEY) == self.installation and not set(tags) <= set(r.tags):
                    r.tags = sorted({*r.tags, *tags})
                    r.update()
                    done += 1
        except wandb.errors.CommError as e:
            raise TransientError(f"W&B API: {e}") from e
        return done

    # ---------------------------------------------------------------- runs out

    def get_run(self, run_id: str, window: tuple[datetime, datetime] | None = None) -> RunRecord:
        """Read run `run_id` back: offline, its newest folder, or with `window` (start, end) the
        newest whose stamp lies in it (`in_window`); folders outside it are ignored and logged at
        warning. Online the W&B server is authoritative: `window` is not used. Raises NotFound if
        there is no such run (in the window), TransientError if the W&B API cannot be reached
        (online)."""
        if self.mode == "online":  # pragma: no cover - needs a W&B server
            if (done := self._finished.get(run_id)) is not None:
                return done
            rec = self._api_get(run_id)
            # W&B's "crashed" (heartbeats stopped) can turn back into running: online only "finished" is kept
            return self._remember(rec) if rec.state == "finished" else rec
        dirs = self._offline_dirs().get(run_id, [])
        if window is not None:
            dirs = in_window(run_id, dirs, window)
        if not dirs:
            raise NotFound(f"no offline W&B run {run_id!r} under {self.dir}" + (" started in the window" if window else ""))
        return self._read(dirs[-1], run_id)

    def get_runs(self, run_ids: Iterable[str]) -> dict[str, RunRecord]:
        """The runs among `run_ids` that exist, by id: `get_run` for many, with one look at the
        offline run folder for all of them. Raises TransientError if the W&B API cannot be reached."""
        if self.mode == "online":  # pragma: no cover - needs a W&B server
            out = {}
            for run_id in dict.fromkeys(run_ids):
                try:
                    out[run_id] = self.get_run(run_id)
                except NotFound:
                    continue
            return out
        dirs = self._offline_dirs()
        return {run_id: self._read(dirs[run_id][-1], run_id) for run_id in dict.fromkeys(run_ids) if run_id in dirs}

    def list_runs(self, group: str | None = None) -> list[RunRecord]:
        """All runs (the newest directory of each id), optionally only `group`, sorted by id."""
        if self.mode == "online":
            return self._api_list(group)
        runs = [self._read(dirs[-1], run_id) for run_id, dirs in self._offline_dirs().items()]
        return sorted((r for r in runs if group is None or r.group == group), key=lambda r: r.id)

    def _offline_dirs(self) -> dict[str, list[Path]]:
        """`offline-run-<stamp>-<id>[-<n>]` directories by id, oldest first (by stamp, collision
        index, then mtime): one `os.scandir` per root, and a `stat` only for a name ending in `-<n>`
        or an id with several directories."""
        found: dict[str, list[tuple[tuple[str, int], os.DirEntry]]] = {}
        for root in (self.dir / "wandb", self.dir / ".wandb"):
            try:
                entries = os.scandir(root)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with entries:
                for d in entries:
                    if (run := offline_run_id(d.path)) and d.is_dir():
                        found.setdefault(run[1], []).append(((run[0], run[2]), d))
        return {
            k: [Path(d.path) for _, d in (sorted(v, key=lambda sd: (sd[0], sd[1].stat().st_mtime)) if len(v) > 1 else v)]
            for k, v in found.items()
        }

    def _read(self, run_dir: Path, run_id: str) -> RunRecord:
        """The run in `run_dir` (see `_run_record`), its log read and folded only when needed.

        A finished or crashed run (its log holds the exit record, and wandb writes nothing after
        it) is kept by id while `run_dir` stays the newest directory of the id. Any other run's
        folded log is kept by the log's (directory, mtime, size); its state (running or unknown,
        by the log's age) is worked out again on every read."""
        done = self._finished.get(run_id)
        if done is not None and done.path == str(run_dir):
            self._finished.move_to_end(run_id)
            return done
        log_file = run_dir / f"run-{run_id}.wandb"
        st = log_file.stat() if log_file.is_file() else None
        key = (str(run_dir), st.st_mtime_ns, st.st_size) if st else (str(run_dir), None, None)
        cached = self._live.pop(run_id, None)
        if cached is not None and cached[0] == key:
            run = cached[1]
        else:
            self.parses += 1
            run = fold(records(log_bytes(log_file) if st else b""))
        rec = _run_record(run_dir, run_id, run, st.st_mtime if st and st.st_size else None)
        if rec.state not in FINAL:
            self._live[run_id] = (key, run)
            if len(self._live) > MAX_CACHED_RUNS:
                del self._live[next(iter(self._live))]  # the longest unchanged
        return self._remember(rec)

    def _remember(self, rec: RunRecord) -> RunRecord:
        """Keep `rec` if it is final (the least recently read one goes past MAX_CACHED_RUNS); return it."""
        if rec.state in FINAL:
            self._finished[rec.id] = rec
            self._finished.move_to_end(rec.id)
            if len(self._finished) > MAX_CACHED_RUNS:
                self._finished.popitem(last=False)
        return rec

    # ---------------------------------------------------------------- online

    def _api(self):
        import wandb

        return wandb.Api(timeout=30, api_key=self._key)

    def check_access(self) -> str:  # pragma: no cover - needs a W&B server
        """Check the online API key and entity; returns "user <name>, entity <entity>".

        W&B GraphQL: the `viewer` query. Raises Forbidden if the key is missing or rejected or
        `settings.entity` is neither the user's entity nor one of their teams, TransientError if
        W&B cannot be reached.
        """
        import wandb

        if not self._key:
            raise Forbidden("WANDB_API_KEY is not set")
        try:
            viewer = self._api().viewer
            teams = viewer.teams
        except ValueError as e:  # "Unable to fetch user data ... verify your API key"
            raise Forbidden(f"W&B rejected WANDB_API_KEY: {e}") from e
        except wandb.errors.AuthenticationError as e:
            raise Forbidden(f"W&B rejected WANDB_API_KEY: {e}") from e
        except wandb.errors.CommError as e:
            raise TransientError(f"W&B API: {e}") from e
        entity = self.settings.entity or viewer.entity
        if entity not in {viewer.entity, *teams}:
            raise Forbidden(
                f"W&B user {viewer.username} is not a member of entity {entity!r} (teams: {', '.join(teams) or 'none'})"
            )
        return f"user {viewer.username}, entity {entity}"

    def publish_report(self, spec: ReportSpec) -> list[str]:
        """Online: save `spec` as a W&B Report and a saved workspace (`wandb_report`); their URLs.
        Offline: one log line, and []. Raises ConfigError (wandb-workspaces missing), TransientError."""
        if self.mode != "online":
            log.warning("W&B is offline (no WANDB_API_KEY): no W&B report or workspace published")
            return []
        return self._save_report(spec)

    def _save_report(self, spec: ReportSpec) -> list[str]:  # pragma: no cover - needs a W&B server
        import wandb

        from senpai.tracker.wandb_report import build_report, build_workspace

        entity = self.settings.entity or self._api().default_entity
        try:
            return [build(spec, entity, self.settings.project).save().url for build in (build_report, build_workspace)]
        except wandb.errors.CommError as e:
            raise TransientError(f"W&B API: {e}") from e

    def _api_path(self, *parts: str) -> str:
        return "/".join(p for p in (self.settings.entity, self.settings.project, *parts) if p)

    def _api_get(self, run_id: str) -> RunRecord:  # pragma: no cover - needs a W&B server
        import wandb

        try:
            run = self._api().run(self._api_path(run_id))
        except wandb.errors.CommError as e:
            raise TransientError(f"W&B API: {e}") from e
        except ValueError as e:  # RunNotFoundError subclasses ValueError
            raise NotFound(f"no W&B run {self._api_path(run_id)!r}: {e}") from e
        return _from_api(run)

    def _api_list(self, group: str | None) -> list[RunRecord]:  # pragma: no cover - needs a server
        import wandb

        try:
            runs = self._api().runs(self._api_path(), filters={"group": group} if group else None)
            return sorted((_from_api(r) for r in runs), key=lambda r: r.id)
        except wandb.errors.CommError as e:
            raise TransientError(f"W&B API: {e}") from e


def _from_api(run: Any) -> RunRecord:  # pragma: no cover - needs a W&B server
    return RunRecord(
        id=run.id,
        name=run.name,
        group=run.group,
        tags=list(run.tags or []),
        config=dict(run.config),
        summary=dict(run.summary_metrics),
        state=_API_STATES.get(run.state, "unknown"),
        url=run.url,
        job_type=run.job_type,
        notes=run.notes,
    )


# -------------------------------------------------------------------- the transaction log


def log_bytes(path: Path) -> bytes:
    """The bytes of a run's log, or b"" (logged) if it holds over MAX_LOG_BYTES; a FIFO put in its
    place meanwhile reads as empty (opened without blocking)."""
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as f:
        data = f.read(MAX_LOG_BYTES + 1)
    if len(data) > MAX_LOG_BYTES:
        log.warning("W&B run log %s is over %d bytes: not read", path, MAX_LOG_BYTES)
        return b""
    return data


def _run_record(run_dir: Path, run_id: str, run: dict[str, Any], mtime: float | None) -> RunRecord:
    """A RunRecord from the folded (`wandb_log.fold`) `run-<id>.wandb` log of an offline run directory;
    `mtime`: the log's, None if it is empty or missing.

    state: `finished` (exit record, code 0), `crashed` (exit record, other code), `running` (no
    exit record, log written in the last LIVE_SECONDS), else `unknown`.
    """
    if run["exit_code"] is not None:
        state = "finished" if run["exit_code"] == 0 else "crashed"
    elif mtime is not None and time.time() - mtime < LIVE_SECONDS:
        state = "running"
    else:
        state = "unknown"
    return RunRecord(
        id=run_id,
        name=run["name"],
        group=run["group"],
        tags=run["tags"],
        config=run["config"],
        summary=run["summary"],
        state=state,
        url=None,
        path=str(run_dir),
        **{k: run[k] for k in ("job_type", "notes", "git_commit", "git_remote")},
    )
