"""`senpai logs JOB|PR [-f]`: a job's log from the fleet (`Fleet.logs`), local or Kubernetes."""

import re
import time
from datetime import UTC, datetime

import click

from senpai.cli.options import config_option
from senpai.cli.wiring import hold_secrets, make_fleet
from senpai.config.harness import load_harness
from senpai.config.roles import Role
from senpai.errors import NotFound
from senpai.fleet.base import Fleet, JobStatus
from senpai.ledger.comments import duration
from senpai.ledger.redact import redact
from senpai.wrapper.policy import job_attempt, job_retry

FOLLOW_WINDOW = 2000  # lines read back on each poll of `--follow` (more new lines than this between polls are skipped)
_PR = re.compile(r"#?(\d+)")
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def resolve_job(jobs: list[JobStatus], target: str) -> JobStatus:
    """The job `target` names: a job name, or a PR number (`12` or `#12`) for that PR's newest job
    (latest started; a pending one, not started yet, is newer). Raises NotFound naming the known jobs."""
    if m := _PR.fullmatch(target.strip()):
        mine = [j for j in jobs if j.pr == int(m.group(1))]
        if mine:
            return max(mine, key=lambda j: (j.started_at is None, j.started_at or _EARLIEST, j.name))
    elif named := [j for j in jobs if j.name == target]:
        return named[0]
    known = ", ".join(f"{j.name} (#{j.pr})" if j.pr else j.name for j in jobs[-20:]) or "none"
    raise NotFound(f"no job matches {target!r}; give a job name or a PR number. The fleet knows: {known}")


def header(job: JobStatus, jobs: list[JobStatus], now: datetime) -> str:
    """One line naming the job whose log follows: its name, role (and student), PR, attempt (a
    verifier's: its verification) and relaunch, phase (and exit code), when it started (UTC) and
    how long ago, and how many jobs its PR has in `jobs` (the fleet's) when more than this one."""
    who = f"{job.role} {job.student}" if job.student and job.role == Role.STUDENT else str(job.role)
    parts = [who + (f" on PR #{job.pr}" if job.pr is not None else "")]
    if n := job_attempt(job):  # 0: not a student's or a verifier's name
        parts.append(f"{'verification' if job.role == Role.VERIFIER else 'attempt'} {n}")
    if k := job_retry(job):
        parts.append(f"relaunch {k}")
    state = f"{job.phase}" + (f" (exit {job.exit_code})" if job.done and job.exit_code is not None else "")
    if job.started_at is None:
        state += ", not started yet"
    else:
        ago = duration((now - job.started_at).total_seconds())
        state += f", started {job.started_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC, {ago} ago"
    mine = sum(j.pr == job.pr for j in jobs) if job.pr is not None else 1
    more = f"; the newest of {mine} jobs of PR #{job.pr} (give a job's name for another)" if mine > 1 else ""
    return f"[job {job.name}: {', '.join(parts)}; {state}{more}]"


def overlap(old: list[str], new: list[str]) -> int:
    """How many first lines of `new` (a later tail of the same log) are the last lines of `old`:
    the largest k with old[-k:] == new[:k]."""
    for k in range(min(len(old), len(new)), 0, -1):
        if old[-k:] == new[:k]:
            return k
    return 0


def follow(fleet: Fleet, name: str, shown: list[str], interval: float) -> None:
    """Print the lines `name`'s log gains, polling every `interval` seconds, until the job ends (its
    last lines printed) or is deleted. `shown`: the log's last FOLLOW_WINDOW lines as last read (each
    poll reads as many, so a poll's first lines are the last ones of the one before)."""
    while True:
        job = fleet.get(name)  # read before the log: a job done by now has written all of it
        new = fleet.logs(name, FOLLOW_WINDOW).splitlines() if job else []
        k = overlap(shown, new)
        if shown and new and k == 0 and len(new) >= FOLLOW_WINDOW:
            click.echo(f"[... more than {FOLLOW_WINDOW} new lines; some are not shown]")
        for line in new[k:]:
            click.echo(redact(line))
        shown = (shown + new[k:])[-FOLLOW_WINDOW:]
        if job is None or job.done:
            click.echo(f"[job {name}: {'deleted' if job is None else f'{job.phase}, exit {job.exit_code}'}]", err=True)
            return
        time.sleep(interval)


@click.command()
@config_option
@click.argument("target", metavar="JOB|PR")
@click.option("-n", "--lines", type=click.IntRange(min=1), default=200, show_default=True, help="Lines of the log's tail.")
@click.option("-f", "--follow", "follow_", is_flag=True, help="Then print new lines until the job ends (Ctrl-C stops).")
@click.option("--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True, help="Seconds between polls.")
def logs(config_path: str, target: str, lines: int, follow_: bool, interval: float) -> None:
    """Print a job's log (the fleet's: a local job's log file, or its Kubernetes pod's log), after a
    line on stderr naming the job: role, PR, attempt, phase, when it started.

    JOB|PR is a job name (`senpai-student-pr12-1`) or a PR number (`12`, `#12`): that PR's newest job.

    \b
    Example, after `senpai demo --out demo-out/run1`:
        senpai logs --config demo-out/run1/harness.yaml 3 -f
    """
    cfg = load_harness(config_path)
    hold_secrets(cfg)
    fleet = make_fleet(cfg)
    jobs = fleet.list()
    job = resolve_job(jobs, target)
    name = job.name
    click.echo(header(job, jobs, datetime.now(UTC)), err=True)  # stderr, like the end line: stdout stays the log alone
    # following compares each poll's tail with the last one: both must span the same FOLLOW_WINDOW lines
    read = fleet.logs(name, max(lines, FOLLOW_WINDOW) if follow_ else lines).splitlines()
    for line in read[-lines:]:
        click.echo(redact(line))
    if follow_:
        try:
            follow(fleet, name, read, interval)
        except KeyboardInterrupt:
            pass
