"""One installation per repository: the wrapper's lease on the forge.

Two installations on one repository (two wrappers, each with its own fleet) would each do all the
work: the same first point proposed twice, every verifier job and advisor batch run twice. So the
wrapper holds a lease where every installation sees it: an issue the bot opens, labelled
`senpai:steer`, so that the steering listing every wrapper polls each tick carries it at no extra
request. Its body names the installation (`TrackerSettings.installation_id`), the holding process
(a random id per wrapper start) and when the lease expires, by the forge's clock (its `Date`
header), so two machines' clocks never meet. Only the bot's open lease issues count; of several
(two wrappers that both opened one) the lowest-numbered is the lease.

- `acquire` (before the first tick): a lease that is free (none, expired or released) is taken,
  and so is the installation's own (a restarted wrapper takes its lease back at once). A new
  claim is read again after SETTLE_SECONDS: of two wrappers racing, the later write wins and the
  other refuses. A lease another installation holds is refused with a ConfigError that names it.
- `keep` (every tick, no request): a lease that now names another holder stops this wrapper
  (ConfigError) before it plans anything; every RENEW_SECONDS the lease is renewed (one PATCH).
- `release` (a clean stop): the lease expires now, so another installation may start at once.

A crashed installation's lease expires TTL_SECONDS after its last renewal (15 minutes; 3 ticks
for a tick longer than 5 minutes). GitHub REST: GET .../issues?labels=senpai:steer&state=all,
POST .../issues, PATCH .../issues/{n}.
"""

import logging
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from senpai.errors import ConfigError, SenpaiError
from senpai.forge.base import Issue
from senpai.forge.port import ForgeReadWrite
from senpai.ledger.labels import STEER
from senpai.ledger.records import by_bot

log = logging.getLogger(__name__)

RENEW_SECONDS = 300.0  # a held lease is renewed this often (one PATCH)
TTL_SECONDS = 900.0  # an unrenewed lease expires this long after its last renewal (3 renewals missed)
SETTLE_SECONDS = 3.0  # a new claim is read again after this long: a racing claim has landed by then
TITLE = "senpai: installation lease (one installation per repository)"
_STAMP = "%Y%m%dT%H%M%SZ"
_MARKER = re.compile(r"<!-- senpai:lease:([0-9a-f]{8}):([0-9a-f]{16}):(\d{8}T\d{6}Z) -->")


@dataclass(frozen=True)
class Claim:
    """The lease as one issue states it."""

    number: int
    installation: str
    holder: str
    expires: datetime  # UTC, by the forge's clock


def current(issues: Sequence[Issue], bot: str) -> Claim | None:
    """The lease among `issues` (the steering issues): the lowest-numbered open issue the bot
    (login `bot`) wrote that carries a lease marker; None if there is none."""
    for issue in sorted(issues, key=lambda i: i.number):
        if issue.state != "open" or not by_bot(issue, bot):
            continue
        found = _MARKER.findall(issue.body[-4096:])
        if not found:
            continue
        installation, holder, stamp = found[-1]
        try:
            expires = datetime.strptime(stamp, _STAMP).replace(tzinfo=UTC)
        except ValueError:  # an edited marker (month 13): the lease has expired
            expires = datetime.min.replace(tzinfo=UTC)
        return Claim(issue.number, installation, holder, expires)
    return None


class Lease:
    """This wrapper's lease on `forge`'s repository `repo` (owner/name, for messages), for installation
    `installation` (8 hex); `tick_seconds` (the wrapper's tick) lengthens the TTL of a slow tick."""

    def __init__(
        self,
        forge: ForgeReadWrite,
        repo: str,
        installation: str,
        tick_seconds: float,
        *,
        settle: float = SETTLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.forge, self.repo, self.installation, self.settle = forge, repo, installation, settle
        self.ttl = timedelta(seconds=max(TTL_SECONDS, 3 * tick_seconds))
        self.holder = secrets.token_hex(8)
        self.number: int | None = None  # the lease issue while this wrapper holds the lease
        self._clock, self._sleep = clock, sleep
        self._renewed = 0.0  # `clock` at the last write

    @property
    def held(self) -> bool:
        return self.number is not None

    def acquire(self) -> None:
        """Take the lease, or raise ConfigError naming the installation that holds it. Raises
        TransientError when the forge cannot answer."""
        claim = current(self._read(), self.forge.login)
        if claim is not None and claim.installation != self.installation and claim.expires > self._now():
            raise self._refusal(claim)
        self._write(claim.number if claim else None, self._now() + self.ttl)
        if claim is None or claim.installation != self.installation:  # a new claim: let a racing one land
            self._sleep(self.settle)
            won = current(self._read(), self.forge.login)
            if won is None or won.holder != self.holder:
                mine, self.number = self.number, None
                if won is not None and mine is not None and mine != won.number:
                    self._try(lambda: self.forge.close_with_labels(mine, [STEER]), "close the losing lease issue")
                raise self._refusal(won) if won else ConfigError(f"the lease on {self.repo} could not be taken; try again")
        log.info("lease on %s taken (issue #%s, installation %s)", self.repo, self.number, self.installation)

    def keep(self, issues: Sequence[Issue]) -> None:
        """While held: raise ConfigError if the lease among `issues` (the steering issues as last
        polled) names another holder; renew it every RENEW_SECONDS, or at once if it is gone (its
        issue closed). No request otherwise."""
        if self.number is None:
            return
        claim = current(issues, self.forge.login)
        if claim is not None and claim.holder != self.holder:
            self.number = None
            raise ConfigError(
                f"the lease on {self.repo} (issue #{claim.number}) was taken by installation {claim.installation}: "
                "another senpai wrapper runs on this repository now; this one stops so that no job runs twice"
            )
        if claim is None or self._clock() - self._renewed >= RENEW_SECONDS:
            self._write(claim.number if claim else None, self._now() + self.ttl)

    def release(self) -> None:
        """Let the lease expire now (a clean stop); a forge error is logged, not raised (it then
        expires by itself)."""
        if self.number is not None:
            number, self.number = self.number, None
            self._try(lambda: self.forge.update_issue(number, self._body(self._now())), "release the lease")

    def _read(self) -> list[Issue]:
        return self.forge.issues_updated(STEER, None).issues  # no validator: a stale 304 must not hide a claim

    def _now(self) -> datetime:
        """The forge's clock at its last answer (our own if it sent none)."""
        return self.forge.answered_at or datetime.now(UTC)

    def _write(self, number: int | None, expires: datetime) -> None:
        body = self._body(expires)
        if number is None:
            number = self.forge.create_issue(TITLE, body, [STEER]).number
        else:
            self.forge.update_issue(number, body)
        self.number, self._renewed = number, self._clock()

    def _body(self, expires: datetime) -> str:
        when = expires.astimezone(UTC)
        return (
            "senpai's installation lease: only the installation named here runs on this repository, so "
            "that no job runs twice.\n\n"
            f"- installation: `{self.installation}` (the harness config's `tracker.installation`, or derived from it)\n"
            f"- expires: {when:%Y-%m-%d %H:%M:%S} UTC (the forge's clock) unless renewed; it is renewed every "
            f"{RENEW_SECONDS / 60:.0f} minutes while its wrapper runs, and released when it stops\n\n"
            "Another installation's wrapper refuses to start while the lease holds. Do not edit this issue.\n\n"
            f"<!-- senpai:lease:{self.installation}:{self.holder}:{when:{_STAMP}} -->"
        )

    def _refusal(self, claim: Claim) -> ConfigError:
        return ConfigError(
            f"another senpai installation ({claim.installation}) holds the lease on {self.repo} (issue "
            f"#{claim.number}, until {claim.expires:%Y-%m-%d %H:%M:%S} UTC unless renewed): two installations on one "
            "repository would do every job twice. Stop that installation's wrapper (it releases the lease as it "
            "stops) or wait until the lease expires; a restart of the same installation (its tracker.installation) "
            "takes its lease back at once"
        )

    def _try(self, write: Callable[[], object], what: str) -> None:
        try:
            write()
        except SenpaiError as e:
            log.warning("could not %s: %s", what, e)
