"""`World`: everything one tick's decisions may depend on, read by the wrapper, frozen."""

from dataclasses import dataclass, field
from datetime import datetime

from senpai.config.target import TargetConfig
from senpai.fleet.base import JobStatus
from senpai.forge.base import Issue, RateLimit
from senpai.ledger.experiment import Experiment
from senpai.ledger.inbox import Inbound, SteerState


@dataclass(frozen=True)
class World:
    """Everything a decision may depend on, read this tick (`senpai.wrapper.policy.plan` and the
    steering rules of `senpai.wrapper.steering` read it; nothing here is written back)."""

    exps: list[Experiment]  # the bot's own senpai PRs (`LedgerReader.experiments`)
    base_sha: str
    jobs: list[JobStatus]
    now: datetime
    handed: dict[str, str] = field(default_factory=dict)  # event id -> job it was handed to (state store)
    steer: SteerState = SteerState()  # from the acks on the forge
    inbox: tuple[Inbound, ...] = ()  # trusted free-text messages, acked or not
    first_seen: dict[str, datetime] = field(default_factory=dict)  # message event id -> first seen (state store)
    # the highest PR number verifying when the current base's round had its first pass (state
    # store): the verifications the round waits for; None: every verifying PR's (`rounds.held`)
    round_upto: int | None = None
    labels: dict[int, tuple[str, ...]] = field(default_factory=dict)  # PR number -> its labels (forge)
    escalated: frozenset[str] = frozenset()  # escalation ids that have their issue (senpai.ledger.escalation)
    commands: tuple[Inbound, ...] = ()  # trusted slash-command messages not acknowledged yet, any order
    issues: tuple[Issue, ...] = ()  # the steering issues (label `senpai:steer`), any state
    target: TargetConfig | None = None  # the base's senpai.yaml (None: missing or invalid)
    fresh: bool = False  # the humans' messages were read this tick: the steering rules act only on a fresh read
    bot: str = ""  # the bot's login: only its own issues' markers count
    foreign: tuple[Experiment, ...] = ()  # open senpai-labelled PRs the bot did not open: blocked, never counted
    rate_limit: RateLimit | None = None  # the forge's last stated rate limit (`Forge.rate_limit`), for `/senpai status`
