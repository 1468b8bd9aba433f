"""What humans wrote, read for the wrapper: the messages of those who may steer (trust by
permission: `senpai.ledger.inbox.Trust`), the acks that record the steering state, and the
steering issues. It decides and posts nothing: the steering rules (`senpai.wrapper.steering`) turn
this view into actions, and the `Dispatcher` carries them out.

Sources (design §4): issues labelled `senpai:steer` (polled with one conditional listing a tick,
`Forge.issues_updated`) and the comments of senpai PRs, which the ledger reader already holds.
Comments come from the ledger reader's one cache (`LedgerReader.comments`), issues' and PRs' alike.
"""

from dataclasses import dataclass, replace
from datetime import datetime

from senpai.config.harness import HarnessConfig
from senpai.forge.base import Comment, Issue
from senpai.forge.read import ForgeReader
from senpai.ledger.blocks import TurnCost
from senpai.ledger.commands import command_lines
from senpai.ledger.inbox import Inbound, SteerState, fold, issue_inbox, pr_inbox, standing, steer_blocks, trust_of
from senpai.ledger.labels import SENPAI, STEER
from senpai.ledger.spend import read_turns
from senpai.ledger.table import LedgerReader


@dataclass(frozen=True)
class HumansView:
    """What humans wrote, as read on the wrapper's last refresh."""

    commands: tuple[Inbound, ...] = ()  # command messages not yet acknowledged (`Inbound.writer`: applied or refused)
    free_text: tuple[Inbound, ...] = ()  # every free-text message that steers (`Trust.steers`; acknowledged or not)
    state: SteerState = SteerState()  # the fold of the acks (`senpai.ledger.inbox.fold`), and the issues' advisor turns
    issues: tuple[Issue, ...] = ()  # the steering issues, newest first


class HumanReader:
    """Reads steering issues (`poll`, every tick) and the humans' messages (`read`, on a refresh)."""

    def __init__(self, cfg: HarnessConfig, forge: ForgeReader, ledger: LedgerReader) -> None:
        self.cfg, self.forge, self.ledger = cfg, forge, ledger
        self._issues: list[Issue] | None = None  # the steering issues as `poll` last listed them
        self._etag: str | None = None  # of that listing's first page
        # (comment id, updated_at) -> its advisor turn records: a comment's text is fixed at that
        # version, and the turns issues only grow, past read_record's LRU
        self._turns: dict[tuple[int, datetime], list[TurnCost]] = {}

    @property
    def issues(self) -> tuple[Issue, ...]:
        """The steering issues as `poll` last listed them, newest first (none before it ran)."""
        return tuple(self._issues or ())

    def poll(self, revalidate: bool = False) -> bool:
        """List the steering issues again if any changed (opened, edited, commented, relabelled); True
        if so. Cost: one conditional request when none did (a 304, free), else every page
        (`Forge.issues_updated`). The answer, not the issues, says so: a comment in the same second
        as the last change leaves every listed field as it was. `revalidate`: sent without the
        cached ETag (the wrapper's full refresh, which a stuck 304 must not fool)."""
        page = self.forge.issues_updated(STEER, None if revalidate else self._etag)
        if page.changed:
            # newest first, as GitHub lists issues by default
            self._issues, self._etag = sorted(page.issues, key=lambda i: i.number, reverse=True), page.etag
        return page.changed

    def read(self) -> HumansView:
        """The view from the issues `poll` listed (polling first if it never ran) and the PRs
        `ledger.refresh()` listed. Cost: the comments of each steering issue whose updated_at moved
        (PRs' are the ledger's), and one permission read (conditional) per author who may write
        (`inbox.trust_of`). An author whose permission could not be read is not heard this refresh:
        their commands wait, and the acks of their earlier ones still count."""
        bot = self.forge.login
        if self._issues is None:
            self.poll()
        issues = self._issues or []
        threads = [(issue, self.ledger.comments(issue)) for issue in issues]
        prs = [(pr, self.ledger.comments(pr)) for pr in self.ledger.pulls if SENPAI in pr.labels]
        authored = [x for issue, comments in threads for x in (issue, *comments)] + [c for _, cs in prs for c in cs]
        trust = trust_of(self.forge, self.cfg.forge.trusted, authored)
        inbox: list[Inbound] = []
        acks, turns = [], []
        for issue, comments in threads:
            messages = issue_inbox(issue, comments, trust)
            acks += steer_blocks(comments, bot, standing(messages))
            turns += [t for c in comments for t in self._turns_of(c, bot)]
            if issue.state == "open":
                inbox += messages
        for pr, comments in prs:
            messages = pr_inbox(pr, comments, trust)
            acks += steer_blocks(comments, bot, standing(messages))
            inbox += messages
        # heard: writers, and known non-writers of a trusted association (their commands are refused)
        heard = [(m, bool(command_lines(m.message.body))) for m in inbox if trust.steers(m)]
        commands = tuple(m for m, command in heard if command and not m.acked)
        # on a closed PR only commands are answered ("closed, nothing done"); free text stays unread
        free = tuple(m for m, command in heard if not command and not m.closed)
        return HumansView(commands, free, replace(fold(acks), advisor_turns=tuple(turns)), tuple(issues))

    def _turns_of(self, c: Comment, bot: str) -> list[TurnCost]:
        """The advisor turn records of steering-issue comment `c` (`spend.read_turns`), parsed once per version."""
        if (c.id, c.updated_at) not in self._turns:
            self._turns[c.id, c.updated_at] = read_turns([c], bot)
        return self._turns[c.id, c.updated_at]
