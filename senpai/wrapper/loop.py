"""The wrapper loop: one tick = observe, decide (steering first), dispatch/reap (design §3, §4).

An idle tick costs two conditional forge requests (304s, free on GitHub: the PRs updated since the
last listing, and the steering issues) and a look at the fleet; the experiments are worked out
again only when either changed, a job finished, or `full_refresh_seconds` passed (W&B runs move
without the forge), and a quiet tick does not plan again (`Wrapper._quiet`). Slash commands are
applied right after a re-read (`senpai.wrapper.steering`); a tick that applied any does nothing
else, so the next one decides on the ledger as the commands left it.

A re-read (`_observe`) happens on the first tick, when either listing changed, a job finished, the
full refresh is due, or a thread was read within `table.SETTLE` of its last change by the forge's
clock (`LedgerReader.unsettled`: a comment in that same second moves no `updated_at`).  It reads
the base head and the target's senpai.yaml there (once per base sha: the `TimeLimits` table, or the
ConfigError why there is none, which holds every launch), works out the experiments and what
humans wrote, saves the ledger snapshot for the jobs (`LedgerReader.save`, handed to each job with
its time in `table.ENV_SNAPSHOT`) and updates the base mirror (`senpai.forge.mirror`).  The full
refresh sends no cached validator (`Forge.revalidate`): on an idle forge it costs three charged
requests (the two listings and the base head).
"""

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from senpai.config.harness import HarnessConfig
from senpai.config.load import parse_yaml_model
from senpai.config.target import CONFIG_FILE, TargetConfig
from senpai.config.time_limits import RELAUNCH, TimeLimits
from senpai.errors import ConfigError, PermanentError, SenpaiError, TransientError
from senpai.fleet.base import Fleet, JobStatus
from senpai.forge import mirror
from senpai.forge.port import ForgeReadWrite
from senpai.forge.read import ForgeReader
from senpai.ledger.escalation import escalated
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState
from senpai.ledger.table import ENV_SNAPSHOT, LedgerReader
from senpai.wrapper import rounds
from senpai.wrapper.actions import Launch
from senpai.wrapper.dispatch import NOT_READ, Dispatcher, JobInputs
from senpai.wrapper.health import TickHealth
from senpai.wrapper.humans import HumanReader, HumansView
from senpai.wrapper.lease import Lease
from senpai.wrapper.metrics import WrapperMetrics
from senpai.wrapper.pace import tick_wait
from senpai.wrapper.policy import pending_messages, plan
from senpai.wrapper.state import StateStore
from senpai.wrapper.world import World

log = logging.getLogger(__name__)


@dataclass
class TickReport:
    tick: int
    calls: int  # forge API calls made during this tick
    refreshed: bool
    actions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    exps: list[Experiment] = field(default_factory=list)
    live_jobs: int = 0
    free: int = 0  # of `calls`, answered 304 (not charged to a rate limit)

    @property
    def decided(self) -> int:
        """Experiments decided with their record complete: a merged PR counts once its `merge` decision
        is posted (the advisor merges first, then records where the merge landed), so a run that stops
        at N decided never stops between the two."""
        return sum(
            e.decided and (e.state == ExperimentState.CLOSED or any(d.verdict == "merge" for d in e.decisions)) for e in self.exps
        )


class Wrapper:
    def __init__(
        self,
        cfg: HarnessConfig,
        config_path: str,
        forge: ForgeReadWrite,
        fleet: Fleet,
        ledger: LedgerReader,
        store: StateStore,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.cfg, self.forge, self.fleet, self.ledger, self.store, self.clock = cfg, forge, fleet, ledger, store, clock
        self.config_path = config_path
        gpus, cpus = {s.name: s.gpus for s in cfg.students}, {s.name: s.cpus for s in cfg.students}
        self.dispatcher = Dispatcher(forge, fleet, config_path, gpus, cpus, ledger)
        self.humans = HumanReader(cfg, forge, ledger)
        # one installation per repository: `run` holds the lease (`tick` alone, as tests drive it, takes none)
        self.lease = Lease(forge, cfg.forge.repo, cfg.tracker.installation_id(cfg.forge.repo), cfg.tick_seconds)
        self.view = HumansView()  # what humans wrote, as of the last re-read
        self._target: tuple[str, TargetConfig | None] = ("", None)  # (base sha, its senpai.yaml)
        self.ticks = 0
        self._exps: list[Experiment] | None = None
        self._foreign: tuple[Experiment, ...] = ()  # `LedgerReader.foreign`, read with `_exps`
        self._base_sha = ""
        self._mirrored: str | None = None  # the base sha the mirror holds (`senpai.forge.mirror`)
        self._mirror_tried: str | None = None  # the base sha the last update tried for
        self._clone_url = ""  # the forge's, read with the base (`_observe`)
        # the jobs' deadlines for senpai.yaml at the base, or why there are none, and the environment
        # added to each job (the mirrored base sha, the snapshot's time): `JobInputs`, each tick's input
        self._time_limits: TimeLimits | ConfigError = NOT_READ.time_limits
        self._job_env: dict[str, str] = {}
        self._done_seen: set[str] = set()
        self._last_refresh = 0.0
        self._planned_nothing = False  # the last tick's plan was empty
        self._jobs_seen: set[tuple[str, str]] = set()  # (name, phase) of the fleet's jobs at the last tick
        self._stop = threading.Event()
        self.health = TickHealth(cfg.tick_seconds)  # read by the HTTP probes (senpai.wrapper.health)
        self.metrics = WrapperMetrics()  # served at /metrics beside them

    def stop(self, *_: object) -> None:
        """Ask the loop to stop after the current tick (SIGTERM/SIGINT handler)."""
        self._stop.set()

    def _observe(self, newly_done: bool) -> bool:
        # the PRs updated since the last listing, and the steering issues: each one conditional
        # request, a 304 (free) when nothing changed; the full refresh sends no cached validator
        # (`Forge.revalidate`), so a stuck 304 (a stale ETag, a caching proxy) delays a change by
        # `full_refresh_seconds` at most
        stale = time.monotonic() - self._last_refresh > self.cfg.full_refresh_seconds
        if stale:
            self.forge.revalidate()
        changed = self.ledger.refresh(revalidate=stale)
        changed = self.humans.poll(revalidate=stale) or changed
        if self._exps is None or changed or newly_done or stale or self.ledger.unsettled:
            self._base_sha = self.forge.branch_sha(self.cfg.forge.base_branch)
            self._target = self._base_target()
            self._time_limits = self._read_time_limits()
            self._clone_url = self.forge.clone_url  # read before the snapshot is saved: jobs take it from its forge memo
            self._exps = self.ledger.experiments(relist=False)
            self._foreign = tuple(self.ledger.foreign())
            self.view = self.humans.read()
            self._save_snapshot()
            self._mirror_base()
            self._last_refresh = time.monotonic()
            return True
        return False

    def _base_target(self) -> tuple[str, TargetConfig | None]:
        """(base sha, `base_target` there), read once per base sha."""
        return self._target if self._target[0] == self._base_sha else (self._base_sha, base_target(self.forge, self._base_sha))

    def _read_time_limits(self) -> TimeLimits | ConfigError:
        """The time limits for senpai.yaml at the base, or the ConfigError saying why there is none."""
        where = f"{CONFIG_FILE} at {self._base_sha[:8]}"
        target = self._target[1]
        if target is None:
            return ConfigError(f"{where} is missing or invalid; every job loads it, so none is launched until it is fixed")
        try:
            return TimeLimits.of(self.cfg.times(), target)
        except ConfigError as e:
            return ConfigError(f"{self.config_path} does not fit {where}: {e}")

    def _mirror_base(self) -> None:
        """Bring the base mirror to the base just read, if it is elsewhere; jobs launched from now
        on are handed the sha it holds, or nothing (they clone from the forge) if that failed. A
        failed update is tried again once the base moves (or the wrapper restarts), not every tick."""
        if self._base_sha in (self._mirrored, self._mirror_tried):
            return
        self._mirror_tried = self._base_sha
        path = mirror.mirror_path(self.cfg.state_dir)
        base = self.cfg.forge.base_branch
        self._mirrored = mirror.update(path, self._clone_url, self.forge.git_env(), base, want=self._base_sha)
        env = {k: v for k, v in self._job_env.items() if k != mirror.ENV_MIRROR_BASE}
        self._job_env = env | ({mirror.ENV_MIRROR_BASE: self._mirrored} if self._mirrored else {})

    def _save_snapshot(self) -> None:
        """Leave the ledger cache for the jobs, and hand them when it was written (`table.ENV_SNAPSHOT`):
        a job loads that snapshot or a later one, never an older one (`LedgerReader.handed` reads no
        forge). A failed write costs them requests, not correctness: they are handed none."""
        try:
            self.ledger.save()
        except OSError as e:
            log.warning("ledger snapshot not written: %s", e)
        if self.ledger.snapshot is not None:
            self._job_env = {**self._job_env, ENV_SNAPSHOT: self.ledger.saved or "none"}

    def tick(self) -> TickReport:
        """Run one tick. Errors of one action are reported and do not stop the others."""
        self.ticks += 1
        calls0, free0 = self.forge.calls, self.forge.not_modified
        jobs = self.fleet.list()
        done = {j.name for j in jobs if j.done}
        refreshed = self._observe(bool(done - self._done_seen))
        self.lease.keep(self.humans.issues)  # raises ConfigError, before any plan, once another wrapper holds it
        self._done_seen = done
        report = TickReport(self.ticks, 0, refreshed, exps=list(self._exps or []))
        quiet = self._quiet(refreshed, jobs)
        world = None if quiet else self._world(report.exps, jobs, fresh=refreshed)
        actions = [] if world is None else plan(world, self.cfg)
        self._planned_nothing, self._jobs_seen = not actions, {(j.name, j.phase) for j in jobs}
        by_pr, inputs = {e.pr: e for e in report.exps}, JobInputs(self._time_limits, dict(self._job_env))
        for action in actions:
            try:
                if isinstance(action, Launch) and action.events:
                    # recorded before the launch: a crash after it leaves no second delivery
                    self.store.see([e.id for e in action.events], world.now)  # (a plan was made: world is set)
                    self.store.handed([e.id for e in action.events], action.name)
                if line := self.dispatcher.apply(action, by_pr, inputs):
                    report.actions.append(line)
                if isinstance(action, Launch):
                    self.metrics.job_launched(action.role)
            except SenpaiError as e:
                report.errors.append(f"{type(action).__name__} {getattr(action, 'name', getattr(action, 'pr', ''))}: {e}")
            except Exception as e:  # the per-item guard: one bad action must not stop the loop
                log.exception("action %s failed", action)
                report.errors.append(f"{type(action).__name__}: unexpected {type(e).__name__}: {e}")
        if report.actions:
            # our own writes: decide on a re-read next tick. What failed, or had nothing left to do,
            # forces none: it is tried again on the next re-read, which a permanent failure must
            # not turn into every tick
            self._exps = None
        report.live_jobs = sum(not j.done for j in self.fleet.list()) if report.actions else sum(not j.done for j in jobs)
        report.calls, report.free = self.forge.calls - calls0, self.forge.not_modified - free0
        return report

    def _quiet(self, refreshed: bool, jobs: list[JobStatus]) -> bool:
        """True if this tick can decide nothing the last one did not: nothing was re-read, the fleet
        holds the jobs it held (in the same phases), the last plan was empty, no trusted message
        waits (its batch window closes by the clock alone), and no job failed within the longest
        relaunch backoff (its relaunch falls due by the clock alone). A stale WIP (also due by the
        clock) waits for the periodic full refresh, which re-reads and plans. Planning walks every
        experiment, so a quiet tick costs what the forge's two 304s and the fleet's listing cost."""
        if refreshed or not self._planned_nothing or {(j.name, j.phase) for j in jobs} != self._jobs_seen:
            return False
        if any(not m.acked for m in self.view.free_text):
            return False
        backoff, now = timedelta(seconds=RELAUNCH.longest_wait() + self.cfg.tick_seconds), self.clock()
        return not any(j.phase == "failed" and (j.finished_at is None or now - j.finished_at < backoff) for j in jobs)

    def _world(self, exps: list[Experiment], jobs: list[JobStatus], fresh: bool) -> World:
        view, now, bot = self.view, self.clock(), self.forge.login
        w = World(
            exps,
            self._base_sha,
            jobs,
            now,
            self.store.handed_jobs(),
            view.state,
            view.free_text,
            labels={p.number: tuple(p.labels) for p in self.ledger.pulls},
            escalated=escalated(list(view.issues), bot),
            commands=view.commands,
            issues=view.issues,
            target=self._target[1],
            fresh=fresh,
            bot=bot,
            foreign=self._foreign,
            rate_limit=self.forge.rate_limit(),
        )
        open_rounds = rounds.open_ids(w)
        ids = [ev.id for ev in pending_messages(w, self.cfg)] + open_rounds
        if not ids:
            return w
        # the batch window starts when the wrapper first sees a message; a round's wait, its first pass
        self.store.see(ids, now)
        upto = self.store.pinned(rounds.upto_key(w.base_sha), rounds.verifying_upto(w), now) if open_rounds else None
        return replace(w, first_seen=self.store.first_seen(ids, now), round_upto=upto)

    def run(
        self,
        until: Callable[[TickReport], bool] | None = None,
        on_tick: Callable[[TickReport], None] | None = None,
        max_ticks: int | None = None,
    ) -> TickReport | None:
        """Start a tick every `tick_seconds` (a fixed period: a tick's own duration is taken off the
        wait, so a slow tick does not push every wake later) until `until(report)` is true,
        `max_ticks` ticks were tried (failed ones included), or SIGTERM/SIGINT arrives. Returns the
        last successful tick's report. Holds the installation's lease on the repository meanwhile
        (`senpai.wrapper.lease`), released on the way out: raises ConfigError if another
        installation holds it, or takes it."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.stop)
            signal.signal(signal.SIGINT, self.stop)
        try:
            return self._loop(until, on_tick, max_ticks)
        finally:
            self.lease.release()

    def _loop(
        self, until: Callable[[TickReport], bool] | None, on_tick: Callable[[TickReport], None] | None, max_ticks: int | None
    ) -> TickReport | None:
        report, tried = None, 0  # ticks tried, failed ones (a lease the forge could not answer for) included
        while not self._stop.is_set():
            started, tried = time.monotonic(), tried + 1
            self.health.tick_started()
            try:
                if not self.lease.held:
                    self.lease.acquire()
                report = self.tick()
            except TransientError as e:  # forge down: keep the loop alive, try again next tick
                log.warning("tick %d: %s", self.ticks, e)
                self.health.tick_finished(str(e))
                self.metrics.tick(time.monotonic() - started, True, self.forge, None)
                if max_ticks is not None and tried >= max_ticks:
                    break
                self.health.waiting(wait := max(self.cfg.tick_seconds, e.retry_after or 0))
                self._stop.wait(wait)
                continue
            self.health.tick_finished(action_errors=len(report.errors))
            self.metrics.tick(time.monotonic() - started, False, self.forge, report.exps)
            if on_tick:
                on_tick(report)
            if (until and until(report)) or (max_ticks is not None and tried >= max_ticks):
                break
            period = tick_wait(self.cfg.tick_seconds, self.forge.rate_limit(), report.calls - report.free, self.clock())
            if period > self.cfg.tick_seconds:
                log.info("forge rate limit: %s; next tick in %.0f s", self.forge.rate_limit(), period)
                self.health.waiting(period)
            self._stop.wait(max(period - (time.monotonic() - started), 0.0))
        return report


def base_target(forge: ForgeReader, sha: str) -> TargetConfig | None:
    """The target's senpai.yaml at commit (or ref) `sha`; None if it is missing or invalid. Raises
    TransientError when the forge cannot answer (the tick fails; the next one tries again).
    GitHub REST: GET /repos/{o}/{r}/contents/senpai.yaml?ref=<sha>."""
    try:
        return parse_yaml_model(forge.read_file(CONFIG_FILE, sha), f"{CONFIG_FILE} at {sha[:8]}", TargetConfig)
    except (PermanentError, ConfigError) as e:
        log.warning("cannot read %s at %s: %s", CONFIG_FILE, sha[:8], e)
        return None
