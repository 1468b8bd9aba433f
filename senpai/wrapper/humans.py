"""What humans wrote, read for the wrapper: trusted messages, the acks that record the steering
state, the steering issues, and the base's senpai.yaml when a `/senpai try` needs it. It decides
and posts nothing: the steering rules (`senpai.wrapper.steering`) turn this view into actions, and
the `Dispatcher` carries them out.

Sources (design §4): issues labelled `senpai:steer` (polled with one conditional listing a tick,
`Forge.issues_updated`) and the comments of senpai PRs, which the ledger reader already holds.
Comments come from the ledger reader's one cache (`LedgerReader.comments`), issues' and PRs' alike.
"""

import logging
from dataclasses import dataclass, field

import yaml
from pydantic import ValidationError

from senpai.config.harness import HarnessConfig
from senpai.config.target import CONFIG_FILE, TargetConfig
from senpai.errors import PermanentError, TransientError
from senpai.forge.base import Forge, Issue
from senpai.ledger.commands import asks_try, command_lines
from senpai.ledger.inbox import Inbound, SteerState, fold, issue_inbox, pr_inbox, steer_blocks
from senpai.ledger.labels import SENPAI, STEER
from senpai.ledger.table import LedgerReader

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HumansView:
    """What humans wrote, as read on the wrapper's last refresh."""

    commands: tuple[Inbound, ...] = ()  # command messages not yet acknowledged
    free_text: tuple[Inbound, ...] = ()  # every trusted free-text message (acknowledged or not)
    state: SteerState = SteerState()  # the fold of the acks (`senpai.ledger.inbox.fold`)
    issues: tuple[Issue, ...] = ()  # the steering issues, newest first
    target: TargetConfig | None = None  # the base's senpai.yaml, read only while a `/senpai try` waits
    target_error: str | None = field(default=None)  # the forge could not give it now: those messages wait


class HumanReader:
    """Reads steering issues (`poll`, every tick) and the humans' messages (`read`, on a refresh)."""

    def __init__(self, cfg: HarnessConfig, forge: Forge, ledger: LedgerReader) -> None:
        self.cfg, self.forge, self.ledger = cfg, forge, ledger
        self._issues: list[Issue] | None = None  # the steering issues as `poll` last listed them
        self._etag: str | None = None  # of that listing's first page
        self._target: tuple[str, TargetConfig | None] | None = None  # (base sha, its senpai.yaml)

    def poll(self) -> bool:
        """List the steering issues again if any changed (opened, edited, commented, relabelled); True
        if so. Cost: one conditional request when none did (a 304, free), else every page
        (`Forge.issues_updated`). The answer, not the issues, says so: a comment in the same second
        as the last change leaves every listed field as it was."""
        page = self.forge.issues_updated(STEER, self._etag)
        if page.changed:
            # newest first, as GitHub lists issues by default
            self._issues, self._etag = sorted(page.issues, key=lambda i: i.number, reverse=True), page.etag
        return page.changed

    def read(self, base_sha: str) -> HumansView:
        """The view from the issues `poll` listed (polling first if it never ran) and the PRs
        `ledger.refresh()` listed. Cost: the comments of each steering issue whose updated_at moved
        (PRs' are the ledger's), and senpai.yaml at `base_sha` once per base while a `/senpai try` waits."""
        trusted, bot = self.cfg.forge.trusted, self.forge.login
        if self._issues is None:
            self.poll()
        issues = self._issues or []
        inbox: list[Inbound] = []
        acks = []
        for issue in issues:
            comments = self.ledger.comments(issue)
            messages = issue_inbox(issue, comments, trusted, bot)
            acks += steer_blocks(comments, bot, messages)
            if issue.state == "open":
                inbox += messages
        for pr in self.ledger.pulls:
            if SENPAI not in pr.labels:
                continue
            comments = self.ledger.comments(pr)
            messages = pr_inbox(pr, comments, trusted, bot)
            acks += steer_blocks(comments, bot, messages)
            inbox += messages
        # on a closed PR only commands are answered ("closed, nothing done"); free text stays unread
        inbox = [m for m in inbox if not m.closed or command_lines(m.message.body)]
        commands = tuple(m for m in inbox if command_lines(m.message.body) and not m.acked)
        target, error = None, None
        if any(asks_try(m.message.body) for m in commands):
            try:
                target = self.target(base_sha)
            except TransientError as e:
                error = str(e)
        free = tuple(m for m in inbox if not command_lines(m.message.body))
        return HumansView(commands, free, fold(acks), tuple(issues), target, error)

    def target(self, base_sha: str) -> TargetConfig | None:
        """The target's senpai.yaml at `base_sha` (cached per sha); None if it is missing or invalid.
        Raises TransientError (not cached) when the forge cannot answer."""
        if self._target is None or self._target[0] != base_sha:
            try:
                data = yaml.safe_load(self.forge.read_file(CONFIG_FILE, base_sha))
                self._target = (base_sha, TargetConfig.model_validate(data))
            except (PermanentError, yaml.YAMLError, ValidationError) as e:
                log.warning("cannot read %s at %s: %s", CONFIG_FILE, base_sha[:8], e)
                self._target = (base_sha, None)
        return self._target[1]
