"""Job names, one grammar beside the event ids (`senpai.ledger.events`): the wrapper's policy builds
them (`job_name`), and the policy, the fleets and `senpai logs` read them back (`parse_job_name`).

    senpai-student-pr<pr>-<attempt>[-r<k>]       a student's attempt, its k-th relaunch
    senpai-verifier-pr<pr>-<verification>[-r<k>]  the PR's n-th verification, its k-th relaunch
    senpai-advisor-<digest>-<try>                the try-th turn over the event batch `digest`

A relaunch (`-r<k>`, k >= 1) is the same work run again after senpai's failure; `JobName.work`
names that work. Every name is a DNS-1123 label (`JobSpec.name`): lowercase, at most 63 characters.
"""

import functools
import re
from typing import NamedTuple

from senpai.config.roles import Role

_GRAMMAR = re.compile(
    r"senpai-(?:(?P<role>student|verifier)-pr(?P<pr>[1-9]\d{0,8})|advisor-(?P<digest>[0-9a-f]{1,16}))"
    r"-(?P<number>[1-9]\d{0,5})(?:-r(?P<retry>[1-9]\d{0,3}))?"
)


class JobName(NamedTuple):
    """The parts of a job name. `number`: a student's attempt, a verifier's verification number
    (1 for the PR's first), an advisor's try; `retry`: the relaunch (0: the first run; advisors
    have none); `pr` for students and verifiers, `digest` for advisors."""

    role: Role
    number: int
    pr: int | None = None
    digest: str | None = None
    retry: int = 0

    @property
    def work(self) -> "JobName":
        """The work this run is for: the same name without its relaunch."""
        return self._replace(retry=0)

    def __str__(self) -> str:
        who = f"advisor-{self.digest}" if self.role == Role.ADVISOR else f"{self.role}-pr{self.pr}"
        return f"senpai-{who}-{self.number}" + (f"-r{self.retry}" if self.retry else "")


def job_name(role: Role, number: int, *, pr: int | None = None, digest: str | None = None, retry: int = 0) -> str:
    """The name of a job (see the module docstring). Raises ValueError for parts the grammar cannot
    read back: a student or verifier without `pr`, an advisor without a hex `digest`, a number below 1."""
    name = str(JobName(role, number, pr, digest, retry))
    if parse_job_name(name) != JobName(role, number, pr if role != Role.ADVISOR else None, digest, retry):
        raise ValueError(f"not a job name senpai can read back: {name!r}")
    return name


@functools.lru_cache(maxsize=4096)
def parse_job_name(name: str) -> JobName | None:
    """The parts of a name `job_name` built; None for any other string (a job senpai did not name).
    Cached: the policy reads every job's name for each piece of work on every tick it plans."""
    m = _GRAMMAR.fullmatch(name)
    if m is None:
        return None
    retry = int(m["retry"] or 0)
    if m["digest"] is not None:
        return None if retry else JobName(Role.ADVISOR, int(m["number"]), digest=m["digest"])
    return JobName(Role(m["role"]), int(m["number"]), pr=int(m["pr"]), retry=retry)
