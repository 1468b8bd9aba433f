"""The two robustness figures, shared by the short tests in `make test` and by `bench/`.

- `fault_run`: the research loop (wrapper in this process, jobs as subprocesses) with every REST and
  git request of the wrapper and the jobs going through `FaultProxy` at `rate`.
- `kill_run`: the forge (`senpai forge serve`) and the wrapper (`senpai wrapper run`) as
  subprocesses; the wrapper is SIGKILLed `kills` times at seeded random points and restarted each
  time, and on some of those rounds a job process, a job's supervisor or the forge is SIGKILLed
  too (the forge is restarted on the same data folder and port).

Both return a JSON-ready dict: the audit of the finished forge (`tests/audit.py`), what was injected,
and wall seconds.  Every loop has a deadline; all traffic stays on 127.0.0.1.
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from audit import audit
from fault_proxy import FaultProxy
from forge_fixtures import seed_token, wait_healthy
from research import make_program

from senpai.cli.demo import run_until
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.errors import SenpaiError
from senpai.forge.localforge.server import LocalForgeServer

ENV = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}


def _audit(config: Path) -> dict:
    cfg = load_harness(config)
    return audit(make_forge(cfg), make_tracker(cfg)).as_dict()


def fault_run(
    tmp: Path,
    *,
    decided: int = 3,
    students: int = 2,
    rate: float = 0.2,
    seed: int = 8,
    timeout: float = 420,
    target: str = "digits",
) -> dict:
    """The loop behind the fault proxy until `decided` experiments are decided or `timeout` seconds pass,
    researching `target` (`research.TARGETS`)."""
    start = time.monotonic()
    seed_token(tmp / "forge")
    server = LocalForgeServer(tmp / "forge").start()
    crash = None
    try:
        with FaultProxy(server.base_url, rate=0.0, seed=seed, slow_seconds=0.5, retry_after=1) as proxy:
            config = make_program(proxy.url, tmp, "faults", students=students, experiments=decided, target=target)
            proxy.rate = rate
            try:
                run_until(config, decided, time.monotonic() + timeout)
            except SenpaiError as e:
                crash = f"{type(e).__name__}: {e}"
            proxy.rate = 0.0
            found = _audit(config)
            faults = proxy.counts()
    finally:
        server.stop()
    return {"figure": "faults", "rate": rate, "seed": seed, "crash": crash, "faults": faults, "audit": found,
            "wall_seconds": round(time.monotonic() - start, 1)}  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Procs:
    """The forge and wrapper subprocesses of one kill run, each with a log file in `root`."""

    def __init__(self, root: Path) -> None:
        self.root, self.port = root, _free_port()
        self.forge: subprocess.Popen | None = None
        self.wrapper: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 (the child owns it)
        with log:
            # the env at spawn time: it carries the bot's token once `make_program` set it
            env = {**os.environ, **ENV}
            return subprocess.Popen([sys.executable, "-m", "senpai", *args], stdout=log, stderr=log, env=env)

    def start_forge(self) -> None:
        seed_token(self.root / "forge")
        self.forge = self._spawn("forge", "forge", "serve", "--data", str(self.root / "forge"), "--port", str(self.port))
        wait_healthy(self.url, timeout=60)

    def start_wrapper(self, config: Path, decided: int) -> None:
        self._offset = (self.root / "wrapper.log").stat().st_size if (self.root / "wrapper.log").exists() else 0
        self.wrapper = self._spawn("wrapper", "wrapper", "run", "--config", str(config), "--until-decided", str(decided))

    def wait_first_tick(self, timeout: float = 60) -> None:
        """Wait until the wrapper printed its first tick line (it prints one per tick), or exited."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.wrapper.poll() is None:
            if (self.root / "wrapper.log").stat().st_size > self._offset:
                return
            time.sleep(0.1)

    @staticmethod
    def kill(proc: subprocess.Popen | None) -> None:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        if proc is not None:
            proc.wait(30)


def _live_job_pids(jobs: Path) -> list[tuple[str, int]]:
    """(kind, pid) of live job commands and supervisors of the local fleet under `jobs`."""
    found = []
    for d in sorted(jobs.glob("senpai-*")):
        for kind, file in (("job", "status.json"), ("supervisor", "supervisor.json")):
            try:
                pid = json.loads((d / file).read_text()).get("pid")
            except (OSError, ValueError):
                continue
            if isinstance(pid, int) and pid > 0 and _alive(pid):
                found.append((kind, pid))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _kill_round(rng: random.Random, procs: _Procs, jobs: Path, kills: Counter, job_rate: float, forge_rate: float) -> None:
    """One round: maybe a job/supervisor or the forge, then the wrapper (SIGKILL each, restart the forge)."""
    r = rng.random()
    if r < forge_rate:
        procs.kill(procs.forge)
        kills["forge"] += 1
        procs.start_forge()
    elif r < forge_rate + job_rate:
        live = _live_job_pids(jobs)
        if live:
            kind, pid = rng.choice(live)
            os.kill(pid, signal.SIGKILL)
            kills[kind] += 1
    procs.kill(procs.wrapper)
    kills["wrapper"] += 1


def kill_run(
    tmp: Path,
    *,
    kills: int = 10,
    decided: int = 3,
    students: int = 2,
    seed: int = 11,
    job_rate: float = 0.25,
    forge_rate: float = 0.05,
    max_gap: float = 8.0,
    startup_rate: float = 0.2,
    timeout: float = 600,
    target: str = "digits",
) -> dict:
    """SIGKILL the wrapper `kills` times, then let it finish. A kill lands 0.3..`max_gap` s (seeded)
    after the wrapper's first tick, or, in `startup_rate` of the rounds, after its start. The loop
    researches `target` (`research.TARGETS`).

    Stops killing once `decided` experiments are decided (fewer kills are then reported); gives up
    after `timeout` seconds in all.
    """
    start, rng, counts = time.monotonic(), random.Random(seed), Counter()
    deadline = start + timeout
    tmp.mkdir(parents=True, exist_ok=True)
    procs = _Procs(tmp)
    procs.start_forge()
    try:
        config = make_program(procs.url, tmp, "kills", students=students, experiments=decided, target=target)
        jobs = Path(load_harness(config).fleet.dir)
        procs.start_wrapper(config, decided)
        while counts["wrapper"] < kills and time.monotonic() < deadline:
            if rng.random() >= startup_rate:
                procs.wait_first_tick()
            time.sleep(rng.uniform(0.3, max_gap))
            if procs.wrapper.poll() == 0:  # it reached `decided`: nothing left to interrupt
                break
            counts["wrapper_crashed"] += procs.wrapper.poll() is not None  # died by itself before the kill
            _kill_round(rng, procs, jobs, counts, job_rate, forge_rate)
            procs.start_wrapper(config, decided)
        if procs.wrapper.poll() not in (None, 0):
            procs.start_wrapper(config, decided)
        finished = _wait(procs.wrapper, deadline)
        procs.kill(procs.wrapper)
        found = _audit(config)
    finally:
        procs.kill(procs.wrapper)
        _stop_jobs(tmp / "run" / "jobs")
        procs.kill(procs.forge)
    return {"figure": "kills", "seed": seed, "kills_requested": kills, "kills": dict(counts),
            "wrapper_finished": finished, "audit": found, "wall_seconds": round(time.monotonic() - start, 1)}  # fmt: skip


def _wait(proc: subprocess.Popen, deadline: float) -> bool:
    """Wait for `proc` to exit 0 (the wrapper reached its target) until `deadline`; False if it did not."""
    try:
        return proc.wait(max(1.0, deadline - time.monotonic())) == 0
    except subprocess.TimeoutExpired:
        return False


def _stop_jobs(jobs: Path) -> None:
    """SIGKILL what is left of the jobs this run started (their commands' groups, then supervisors)."""
    for kind, pid in _live_job_pids(jobs):
        try:
            os.killpg(pid, signal.SIGKILL) if kind == "job" else os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
