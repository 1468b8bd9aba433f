"""Human steering in the wrapper: read trusted messages, apply slash commands, acknowledge deliveries.

Slash commands are applied here, by code, whatever the runtime.  Each command message is answered
by one acknowledgement (`reply_to_human(kind="ack")`): the applied commands in a `senpai-steer`
block, or, if any line is bad, the syntax and nothing applied.  The ack *is* the record: the
steering state (paused, experiment cap, queued tries) is folded from these blocks, so replaying a
tick, restarting the wrapper or deleting its state store applies nothing twice and loses nothing.
`/senpai stop` has effects outside the ack (job deleted, PR closed): they follow the ack, and
`enforce_stops` makes every acknowledged stop true on each refresh, so a crash in between is
finished by the next tick.  `/senpai allow compute` is only its ack: the merge gate reads it from
the PR's comments (`inbox.compute_allowance`).

Free-text messages become events (see `policy.pending_messages`); once one is handed to a job the
wrapper acknowledges "delivered to ...", and `ack_deliveries` repairs a missing ack after a crash.
"""

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import yaml
from pydantic import ValidationError

from senpai.config.harness import HarnessConfig
from senpai.config.target import CONFIG_FILE, TargetConfig
from senpai.errors import PermanentError, SenpaiError
from senpai.fleet.base import Fleet, JobStatus
from senpai.forge.base import Comment, Forge, Issue
from senpai.ledger import transitions
from senpai.ledger.blocks import Decision, Steer, SteerCommand
from senpai.ledger.commands import SYNTAX, CommandError, command_lines, parse_commands
from senpai.ledger.consistency import check, seen_bases, verified_merge
from senpai.ledger.events import Message
from senpai.ledger.experiment import Experiment
from senpai.ledger.inbox import Inbound, SteerState, apply_command, fold, issue_inbox, pr_inbox, steer_blocks
from senpai.ledger.labels import ATTENTION, SENPAI, STEER
from senpai.ledger.records import neutral
from senpai.ledger.steering import message_ref, reply_to_human
from senpai.ledger.table import SETTLE, LedgerReader
from senpai.wrapper.policy import Launch, patience_streak

log = logging.getLogger(__name__)


@dataclass
class SteerView:
    """What the wrapper read on its last refresh."""

    commands: list[Inbound] = field(default_factory=list)  # command messages not yet acked
    free_text: list[Inbound] = field(default_factory=list)  # every trusted free-text message (acked or not)
    state: SteerState = SteerState()
    issues: list[Issue] = field(default_factory=list)


class Steering:
    """Reads steering issues and PR comments (on the wrapper's refresh) and applies slash commands."""

    def __init__(self, cfg: HarnessConfig, forge: Forge, fleet: Fleet, ledger: LedgerReader) -> None:
        self.cfg, self.forge, self.fleet, self.ledger = cfg, forge, fleet, ledger
        self._comments: dict[int, tuple[datetime | None, list[Comment]]] = {}
        self._target: tuple[str, TargetConfig | None] | None = None
        self._reported: set[int | str] = set()  # PRs and base heads whose issue is open (found on the forge)
        self.view = SteerView()
        self._issues: list[Issue] | None = None  # the steering issues as `poll` last listed them
        self._etag: str | None = None  # of that listing's first page

    def _issue_comments(self, issue: Issue) -> list[Comment]:
        """Comments of a steering issue, cached like `LedgerReader.comments` (by a settled updated_at)."""
        cached = self._comments.get(issue.number)
        if cached is None or cached[0] != issue.updated_at:
            fetched_at = datetime.now(UTC)
            comments = self.forge.list_comments(issue.number)
            settled = fetched_at - issue.updated_at > timedelta(seconds=SETTLE)
            cached = (issue.updated_at if settled else None, comments)
            self._comments[issue.number] = cached
        return cached[1]

    def _reply(self, m: Message, text: str, record: Steer | None = None) -> None:
        """The ack of `m` (through the one reply function); the thread's cached comments are dropped."""
        reply_to_human(self.forge, m, text, kind="ack", record=record)
        self._comments.pop(m.number, None)
        self.ledger.forget(m.number)

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

    def read(self) -> SteerView:
        """Work steering out from the issues `poll` listed (polling first if it never ran) and the PRs
        `ledger.refresh()` listed, whose comments it reuses. Cost: the comments of each steering issue
        whose updated_at moved."""
        trusted, bot = self.cfg.forge.trusted, self.forge.login
        if self._issues is None:
            self.poll()
        issues = self._issues or []
        inbox: list[Inbound] = []
        acks = []
        for issue in issues:
            comments = self._issue_comments(issue)
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
        commands = [m for m in inbox if command_lines(m.message.body)]
        self.view = SteerView(
            commands=[m for m in commands if not m.acked],
            free_text=[m for m in inbox if not command_lines(m.message.body)],
            state=fold(acks),
            issues=issues,
        )
        return self.view

    def target(self, base_sha: str) -> TargetConfig | None:
        """The target's senpai.yaml at `base_sha` (cached per sha); None if it is missing or invalid.
        Raises TransientError (not cached) when the forge cannot answer: the command waits."""
        if self._target is None or self._target[0] != base_sha:
            try:
                data = yaml.safe_load(self.forge.read_file(CONFIG_FILE, base_sha))
                self._target = (base_sha, TargetConfig.model_validate(data))
            except (PermanentError, yaml.YAMLError, ValidationError) as e:
                log.warning("cannot read %s at %s: %s", CONFIG_FILE, base_sha[:8], e)
                self._target = (base_sha, None)
        return self._target[1]

    # ------------------------------------------------------------------ slash commands

    def apply_commands(self, exps: list[Experiment], base_sha: str, jobs: list[JobStatus]) -> tuple[list[str], list[str]]:
        """Apply every unacknowledged command message in the order they were written (`Inbound.order`),
        each against the state the earlier ones left: (one line per message applied or rejected, one
        line per message that failed and is tried again on the next re-read)."""
        done, failed = [], []
        for m in sorted(self.view.commands, key=lambda m: m.order):
            try:
                done.append(self._apply(m, exps, base_sha, jobs))
            except SenpaiError as e:
                failed.append(f"#{m.message.number}: command from @{m.message.author} not applied yet: {e}")
        return done, failed

    def _apply(self, m: Inbound, exps: list[Experiment], base_sha: str, jobs: list[JobStatus]) -> str:
        msg = m.message
        if m.closed:
            self._reply(msg, f"PR #{msg.number} is closed: nothing was done. Steer on an open PR or a `{STEER}` issue.")
            return f"#{msg.number}: command from @{msg.author} on a closed PR, nothing done"
        try:
            lines = command_lines(msg.body)
            target = self.target(base_sha) if any(line.lower().split()[1:2] == ["try"] for line in lines) else None
            commands = parse_commands(msg.body, target.params.space if target else None, msg.number if m.on_pr else None)
            commands = [self._check(c, msg.author, exps) for c in commands]
        except CommandError as e:
            self._reply(msg, f"Nothing was applied: {e}\n\n{SYNTAX}")
            return f"#{msg.number}: rejected a command from @{msg.author}: {e}"
        block = Steer(message=message_ref(msg), author=msg.author, commands=commands)
        done, state = [], self.view.state
        for i, c in enumerate(commands):  # each reply tells the state its command leaves
            state = apply_command(state, block, i, c)
            done.append(self._describe(c, len(exps), jobs, state))
        self._reply(msg, "Applied:\n" + "\n".join(f"- {d}" for d in done), block)
        self.view.state = state  # the later messages of this tick see it
        stops = {c.pr: msg.author for c in commands if c.verb == "stop" and c.pr is not None}
        self.enforce_stops(exps, base_sha, jobs, stops)
        return f"#{msg.number}: applied from @{msg.author}: " + "; ".join(done)

    def _check(self, c: SteerCommand, author: str, exps: list[Experiment]) -> SteerCommand:
        """Completes `c` with what the ledger says, or raises CommandError before anything is applied."""
        if c.verb == "resume":
            return c.model_copy(update={"decided": sorted(e.pr for e in exps if e.decided)})
        if c.verb in ("stop", "allow"):
            exp = next((e for e in exps if e.pr == c.pr), None)
            if exp is None or exp.decided:
                raise CommandError(f"PR #{c.pr} is not an open senpai experiment")
        return c

    def _describe(self, c: SteerCommand, opened: int, jobs: list[JobStatus], state: SteerState) -> str:
        """The reply line of `c`; `state` is the steering state right after it."""
        if c.verb == "pause":
            return "paused: no new experiments are opened until `/senpai resume`; running jobs, reviews and verifications go on"
        if c.verb == "resume":
            return "resumed: new experiments are opened again (patience counts from now)"
        if c.verb == "budget":
            return f"experiment cap set to {c.experiments} ({opened} opened so far)"
        if c.verb == "try":
            point = ", ".join(f"`{k}={v}`" for k, v in c.params.items())
            when = " after `/senpai resume`" if state.paused else ""
            return f"queued {point}: it is opened for the next idle student{when}, before any proposal"
        if c.verb == "allow":
            return f"allowed PR #{c.pr} more compute than senpai.yaml's tolerance: the merge gate accepts its compute"
        live = [j.name for j in jobs if j.pr == c.pr and not j.done]
        return f"stopped PR #{c.pr}: " + (f"deleting job {', '.join(live)}, " if live else "") + "closing it with a decision"

    def enforce_stops(
        self, exps: list[Experiment], base_sha: str, jobs: list[JobStatus], stops: dict[int, str] | None = None
    ) -> list[str]:
        """Make every acknowledged `/senpai stop` true: delete the PR's live jobs, close it with a
        decision "stopped by @user".  Both steps are idempotent, so a crash after the ack is
        finished here on the next tick (the ack is the record)."""
        stops = self.view.state.stops if stops is None else stops
        out = []
        for e in exps:
            author = stops.get(e.pr)
            if author is None or e.decided:
                continue
            for j in jobs:
                if j.pr == e.pr and not j.done:
                    self.fleet.delete(j.name)
            pr = self.forge.get_pull(e.pr)
            if pr.state == "open":
                d = Decision(pr=e.pr, head=pr.head_sha, verdict="close", reason=f"stopped by @{author}", metric=None)
                transitions.decide(self.forge, pr, e, d, None, base_sha)
            out.append(f"#{e.pr}: stopped by @{author}")
        return out

    # ------------------------------------------------------------------ deliveries and patience

    def ack_delivery(self, launch: Launch) -> None:
        """Tell each human whose message `launch` carries where it went (idempotent per version)."""
        for ev in launch.events:
            if ev.kind == "message" and ev.message is not None:
                self._reply(ev.message, delivered_text(launch))

    def ack_deliveries(self, handed: dict[str, str], jobs: list[JobStatus]) -> list[str]:
        """Repair: ack messages handed to an existing job whose ack was lost (a crash after launch)."""
        by_name = {j.name: j for j in jobs}
        out = []
        for m in self.view.free_text:
            job = by_name.get(handed.get(f"message:{message_ref(m.message)}", ""))
            if not m.acked and job is not None:
                target = "the advisor" if job.role == "advisor" else f"student {job.student} (PR #{job.pr})"
                self._reply(m.message, f"Delivered to {target} (job `{job.name}`).")
                out.append(f"#{m.message.number}: acknowledged delivery to {job.name}")
        return out

    def _own_bodies(self, issues: list[Issue]) -> str:
        """The bodies of the bot's own `issues`, joined: where its issue markers are looked for.
        Only the bot's own count: anyone else's body could carry a marker to hide an issue."""
        return "\n".join(i.body for i in issues if i.user == self.forge.login)

    def patience_issue(self, exps: list[Experiment]) -> str | None:
        """Open one issue for humans when patience paused new work (idempotent per streak)."""
        cfg, state = self.cfg, self.view.state
        streak = patience_streak(exps, state.resumed_after)
        if cfg.patience is None or len(streak) < cfg.patience or state.paused:
            return None
        key = f"<!-- senpai:attention:{'-'.join(str(e.pr) for e in streak)} -->"
        if key in self._own_bodies(self.view.issues):
            return None
        tried = "\n".join(
            f"- #{e.pr} `{e.hypothesis.id if e.hypothesis else '?'}` "
            f"{', '.join(f'{k}={v}' for k, v in (e.hypothesis.params if e.hypothesis else {}).items())}: "
            f"{e.decision.reason if e.decision else e.state}"
            for e in streak
        )
        body = (
            f"senpai stopped opening new experiments: the last {len(streak)} decided experiments did not improve "
            f"on the baseline (patience {cfg.patience}). Running work finishes.\n\nWhat was tried:\n{neutral(tried)}\n\n"
            "To go on, comment `/senpai resume` here. You can also steer first:\n\n"
            f"{SYNTAX}\n\nFree text here goes to the advisor.\n\n{key}"
        )
        issue = self.forge.create_issue(f"senpai paused: {len(streak)} experiments without improvement", body, [STEER, ATTENTION])
        self.view.issues.append(issue)
        return f"#{issue.number}: opened an issue for humans (patience {cfg.patience} reached)"

    def hand_merge_issues(self, exps: list[Experiment], base_sha: str, jobs: list[JobStatus]) -> list[str]:
        """Open one issue for humans per merge senpai did not verify (a merge by hand, or onto a base
        that moved), and one per base head no senpai merge produced (a push by hand), each found again
        by its marker so a restart opens none twice.  Not while an advisor turn runs: it may be
        between its merge and its decision comment.  GitHub REST: GET .../issues?labels=senpai&state=all
        (only when something is not reported yet), POST .../issues."""
        if any(j.role == "advisor" and not j.done for j in jobs):
            return []
        bases = seen_bases(exps)
        todo = [e for e in exps if e.state == "merged" and not verified_merge(e, bases) and e.pr not in self._reported]
        flags = check(exps, base_sha)
        pushed = f"base-{base_sha}" if flags.base and f"base-{base_sha}" not in self._reported else None
        if not todo and not pushed:
            return []
        found, out = self._own_bodies(self.forge.list_issues(SENPAI, "all")), []
        for e in todo:
            what = "\n".join(f"- {f}" for f in flags.prs.get(e.pr, []))
            body = (
                f"PR #{e.pr} was merged, but not by a verified senpai merge:\n\n{what}\n\n"
                "senpai does not take it as the baseline: the base has no measured value until the next "
                "verified merge. Check the merged code, then revert it or let the next experiments measure it."
            )
            out += self._issue_once(found, f"hand-merge:pr-{e.pr}", f"senpai: PR #{e.pr} was merged unverified (by hand?)", body)
            self._reported.add(e.pr)
        if pushed:
            body = (
                f"The base branch head `{base_sha[:12]}` was not produced by a senpai merge (a push by hand?):\n\n"
                + "\n".join(f"- {f}" for f in flags.base)
                + "\n\nsenpai does not take it as a measured baseline: its code is not what any verification "
                "measured. Check the commit, then revert it or let the next experiments measure it."
            )
            out += self._issue_once(found, f"hand-push:{base_sha}", f"senpai: the base moved by hand to {base_sha[:8]}", body)
            self._reported.add(pushed)
        return out

    def _issue_once(self, found: str, key: str, title: str, body: str) -> list[str]:
        """Open the issue `title` unless the bot's issues (`found`) carry the marker of `key`."""
        mark = f"<!-- senpai:{key} -->"
        if mark in found:
            return []
        issue = self.forge.create_issue(title, f"{body}\n\n{mark}", [SENPAI, ATTENTION])
        return [f"#{issue.number}: opened an issue for humans ({title.removeprefix('senpai: ')})"]


def delivered_text(launch: Launch) -> str:
    if launch.role == "advisor":
        return f"Delivered to the advisor (job `{launch.name}`)."
    return f"Delivered to student {launch.student} on PR #{launch.pr} (job `{launch.name}`)."
