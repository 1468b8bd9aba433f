"""The roles a fleet job runs as. A job's name (`senpai-<role>-...`), its deadline and inner
limits (`senpai.config.time_limits`), its image and resources on Kubernetes, and its forge
User-Agent all name one of these."""

from enum import StrEnum


class Role(StrEnum):
    """A job's role: the advisor (decides), a student (trains one hypothesis), or the verifier
    (measures a candidate against its baseline on the holdout)."""

    ADVISOR = "advisor"
    STUDENT = "student"
    VERIFIER = "verifier"
