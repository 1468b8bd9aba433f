"""Pacing against the forge's rate limit: the wrapper slows before the limit is reached, never after.

GitHub gives a token 5,000 charged requests an hour (a 304 is free) and states what is left on
every answer (`Forge.rate_limit`). The wrapper and its jobs share that rate limit. After each tick the
wrapper waits its period, or longer when ticks like the last one would spend more than what is left
above a reserve before the window resets: the reserve is for the jobs and for humans' tools.
"""

from datetime import datetime

from senpai.forge.base import RateLimit

RESERVE = 0.1  # fraction 0..1 of the limit the wrapper leaves to its jobs
WINDOW = 3600.0  # seconds: GitHub's rate-limit window; no wait is longer (a reset further off is a bad header or clock)


def tick_wait(period: float, rate: RateLimit | None, charged: int, now: datetime, reserve: float = RESERVE) -> float:
    """Seconds from one tick's start to the next's.

    `period`: the configured tick period, seconds; `rate`: the forge's last stated limit (None:
    unknown, so `period`); `charged`: requests the last tick made that were not answered 304;
    `now`: aware UTC. With nothing left above the reserve, the wait runs to the window's reset
    (at least `period`); else it is what spreads ticks like the last one over what is left. The
    reset counts as at most WINDOW seconds away.
    """
    if rate is None or rate.reset_at is None:
        return period
    to_reset = min(max((rate.reset_at - now).total_seconds(), 0.0), WINDOW)
    allowance = rate.remaining - reserve * rate.limit
    if allowance <= 0:
        return max(period, to_reset + 1.0)
    if charged <= 0:
        return period
    return max(period, min(to_reset + 1.0, charged * to_reset / allowance))
