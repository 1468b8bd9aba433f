"""Slash commands: the steering humans can do with no LLM, parsed and checked by code.

A message is a command message if any line, stripped, starts with `/senpai` (as a word, in any
case); every such line is one command and the other lines are ignored.  Lines inside a fenced code
block (``` or ~~~) and quoted lines (`> ...`, and the lines right after one up to a blank line,
which Markdown renders inside the quote) are never commands: quoting a command must not run it.
All commands of a message are checked before any is applied: one bad line and nothing is applied
(the reply explains the syntax, naming every error).

    /senpai pause                       stop opening new experiments (running work finishes)
    /senpai resume                      open new experiments again (also after a patience pause)
    /senpai budget key=value ...        raise fleet-wide caps: experiments, dollars, tokens, gpu_hours,
                                        cpu_hours, end (override the harness config's)
    /senpai try key=value ...           open this params point next, before any proposal
    /senpai stop                        on a PR: stop its job and close it with a decision
    /senpai allow compute               on a PR: the merge gate accepts its compute over the tolerance
"""

import math
import re
import shlex
from datetime import UTC, datetime

from senpai.config.target import CategoricalParam, FloatParam, IntParam, ParamSpec
from senpai.ledger.blocks import Scalar, SteerCommand

PREFIX = "/senpai"
_LINE = re.compile(r"^/senpai(?:\s|$)", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
SYNTAX = """Slash commands (one per line, from the repository's owner, members or collaborators):
- `/senpai pause`: stop opening new experiments; running jobs, reviews and verifications go on
- `/senpai resume`: open new experiments again (also after a patience pause)
- `/senpai budget key=value ...`: set caps: experiments, dollars, tokens, gpu_hours, cpu_hours (> 0), end (ISO time)
- `/senpai try key=value ...`: open this hypothesis for the next idle student, before any proposal
- `/senpai stop`: on an experiment PR: stop its job and close the PR
- `/senpai allow compute`: on an experiment PR: let it merge although it trains with more compute than senpai.yaml's tolerance"""


class CommandError(ValueError):
    """A command line that cannot be applied; the message says why (it is shown to the human)."""


def command_lines(body: str) -> list[str]:
    """The `/senpai ...` lines of a message body, stripped, in order (empty: not a command message).

    Skips fenced code blocks (CommonMark: a fence closes with the same character, at least as long;
    an unclosed fence runs to the end) and block quotes (a `>` line and its lazy continuation lines)."""
    out, fence, quote = [], "", False
    for line in (body or "").splitlines():
        opened, text = _FENCE.match(line), line.strip()
        if fence:
            if opened and opened.group(1).startswith(fence) and not text.strip(fence[0]):
                fence = ""
            continue
        quote = text.startswith(">") or (quote and bool(text) and not opened)
        if opened:
            fence = opened.group(1)
        elif not quote and _LINE.match(text):
            out.append(text)
    return out


def parse_line(line: str) -> tuple[str, list[str]]:
    """(verb, argument words) of one `/senpai` line (shell-style quoting). Raises CommandError."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise CommandError(f"`{_quote(line)}`: {e}") from e
    if len(words) < 2:
        raise CommandError(f"`{_quote(line)}`: no command after /senpai")
    return words[1].lower(), words[2:]


def _pairs(line: str, words: list[str]) -> dict[str, str]:
    args: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key or not value:
            raise CommandError(f"`{_quote(line)}`: expected key=value, got `{_quote(word)}`")
        if key in args:
            raise CommandError(f"`{_quote(line)}`: `{_quote(key)}` given twice")
        args[key] = value
    return args


def to_command(line: str, space: dict[str, ParamSpec] | None, on_pr: int | None) -> SteerCommand:
    """The command one line asks for, checked. `space` is the target's params space (None if unknown),
    `on_pr` the PR the message was written on (None on an issue). Raises CommandError."""
    verb, words = parse_line(line)
    if verb in ("pause", "resume", "stop"):
        if words:
            raise CommandError(f"`{_quote(line)}`: `{verb}` takes no arguments")
        if verb == "stop" and on_pr is None:
            raise CommandError("`/senpai stop` works in a comment on the experiment PR to stop")
        return SteerCommand(verb=verb, pr=on_pr if verb == "stop" else None)
    if verb == "allow":
        if [w.lower() for w in words] != ["compute"]:
            raise CommandError(f"`{_quote(line)}`: expected `/senpai allow compute`")
        if on_pr is None:
            raise CommandError("`/senpai allow compute` works in a comment on the experiment PR it allows")
        return SteerCommand(verb="allow", pr=on_pr)
    if verb not in ("budget", "try"):
        raise CommandError(f"`{_quote(line)}`: unknown command `{_quote(verb)}`")
    args = _pairs(line, words)
    if verb == "budget":
        return _budget(line, args)
    if not args:
        raise CommandError(f"`{_quote(line)}`: give at least one key=value")
    if space is None:
        raise CommandError("the target's senpai.yaml could not be read, so the params cannot be checked")
    params, problems = {}, []
    for k, v in args.items():
        try:
            params[k] = typed_value(k, v, space)
        except CommandError as e:
            problems.append(str(e))
    if problems:
        raise CommandError("; ".join(problems))
    return SteerCommand(verb="try", params=params)


BUDGET_KEYS = {  # key -> (SteerCommand field, type, what it caps)
    "experiments": ("experiments", int, "experiments in all"),
    "dollars": ("dollars", float, "LLM dollars"),
    "tokens": ("tokens", int, "LLM tokens"),
    "gpu_hours": ("gpu_hours", float, "GPU hours of jobs"),
    "cpu_hours": ("cpu_hours", float, "CPU-core hours of jobs"),
    "end": ("end_at", datetime, "the wall-clock end, ISO 8601 with a zone (2026-12-31T18:00Z)"),
}


def _budget(line: str, args: dict[str, str]) -> SteerCommand:
    """`/senpai budget key=value ...`: new fleet-wide caps, each > 0 (a time: in the future is the
    wrapper's business, any aware time is taken). Raises CommandError."""
    unknown = sorted(set(args) - set(BUDGET_KEYS))
    if not args or unknown:
        raise CommandError(f"`{_quote(line)}`: expected `/senpai budget key=value ...` with keys {', '.join(BUDGET_KEYS)}")
    fields: dict[str, object] = {}
    for key, raw in args.items():
        name, kind, what = BUDGET_KEYS[key]
        if kind is datetime:
            try:
                when = datetime.fromisoformat(raw)
            except ValueError:
                when = None
            if when is None or when.tzinfo is None:
                raise CommandError(f"`{key}` must be {what}, got `{_quote(raw)}`")
            fields[name] = when.astimezone(UTC).isoformat(timespec="seconds")
            continue
        try:
            value = kind(raw)
        except ValueError:
            value = 0
        if not (math.isfinite(value) and value > 0):
            raise CommandError(f"`{key}` ({what}) must be a {'whole ' if kind is int else ''}number > 0, got `{_quote(raw)}`")
        fields[name] = value
    return SteerCommand(verb="budget", **fields)


def parse_commands(body: str, space: dict[str, ParamSpec] | None, on_pr: int | None) -> list[SteerCommand]:
    """Every command of a command message, all checked. Raises CommandError (naming every bad line)."""
    out, problems = [], []
    for line in command_lines(body):
        try:
            out.append(to_command(line, space, on_pr))
        except CommandError as e:
            problems.append(str(e))
    if problems:
        raise CommandError("; ".join(problems))
    return out


def typed_value(key: str, raw: str, space: dict[str, ParamSpec]) -> Scalar:
    """`raw` as the type `space[key]` declares, inside its range. Raises CommandError."""
    spec = space.get(key)
    if spec is None:
        raise CommandError(f"unknown param `{_quote(key)}`; the target's params are {', '.join(sorted(space))}")
    if isinstance(spec, IntParam):
        try:
            value: int | float = int(raw)
        except ValueError:
            raise CommandError(f"`{key}` must be a whole number, got `{_quote(raw)}`") from None
    elif isinstance(spec, FloatParam):
        try:
            value = float(raw)
        except ValueError:
            raise CommandError(f"`{key}` must be a number, got `{_quote(raw)}`") from None
        if not math.isfinite(value):
            raise CommandError(f"`{key}` must be finite, got `{_quote(raw)}`")
    else:
        return _choice(key, raw, spec)
    if not spec.low <= value <= spec.high:
        raise CommandError(f"`{key}={_quote(raw)}` is out of range [{spec.low}, {spec.high}]")
    return value


def _choice(key: str, raw: str, spec: CategoricalParam) -> Scalar:
    for choice in spec.choices:
        if str(choice).lower() == raw.lower() if isinstance(choice, bool) else str(choice) == raw:
            return choice
    raise CommandError(f"`{key}` must be one of {', '.join(str(c) for c in spec.choices)}, got `{_quote(raw)}`")


def _quote(text: str) -> str:
    """`text` safe inside an inline code span of a reply (no backticks, one line, bounded)."""
    return text.replace("`", "'").replace("\n", " ")[:200]
