"""Slash commands: the steering humans can do with no LLM, parsed and checked by code.

A message is a command message if a line of one of its top-level Markdown paragraphs starts with
`/senpai` (as a word, in any case); every such line is one command and the other lines are ignored.
The body is parsed as CommonMark (`command_lines`), so a line that Markdown renders as code (fenced
or indented), inside a block quote, a list or an HTML comment is never a command: quoting or
hiding a command must not run it. A message that holds raw HTML (a block or an inline tag; HTML
comments aside) holds no command at all: CommonMark ends an HTML block at a blank line, so a line
between `<details>` and `</details>` parses as a top-level paragraph that GitHub shows folded away.
All commands of a message are checked before any is applied: one bad line and nothing is applied
(the reply explains the syntax, naming every error).

    /senpai pause                       stop opening new experiments (running work finishes)
    /senpai resume                      open new experiments again (also after a patience pause)
    /senpai caps key=value ...          raise fleet caps: experiments, dollars, tokens, gpu_hours,
                                        cpu_hours, end (override the harness config's); the old name
                                        `/senpai budget` is still read (RENAMED)
    /senpai try key=value ...           open this params point next, before any proposal
    /senpai stop                        on a PR: stop its job and close it with a decision
    /senpai allow compute               on a PR: the merge gate accepts its compute over the tolerance
    /senpai approve <fingerprint>       on a PR: approve the merge senpai asked about (senpai.yaml `approval`)
    /senpai reject <fingerprint> why... on a PR: close it with the human's reason instead
    /senpai help                        answered with this syntax
    /senpai status                      answered with senpai's status (`senpai.wrapper.status`)

`help` and `status` are queries (QUERIES): they are answered, change nothing and leave no record.
"""

import difflib
import math
import re
import shlex
from datetime import UTC, datetime

from markdown_it import MarkdownIt
from markdown_it.token import Token

from senpai.config.harness import CAP_MOST
from senpai.config.target import CategoricalParam, FloatParam, IntParam, ParamSpec
from senpai.ledger.blocks import CAPS_VERB, Scalar, SteerCommand
from senpai.ledger.records import visible

PREFIX = "/senpai"
_LINE = re.compile(r"^/senpai(?:\s|$)", re.IGNORECASE)
_MD = MarkdownIt("commonmark")
MAX_BODY = 65_536  # characters of a message read for commands: GitHub's cap on a comment
QUERIES = ("help", "status")  # verbs answered in the ack that change nothing (no `senpai-steer` record)
RENAMED = {"budget": "caps"}  # old verb -> its name now: still read and applied (comments on record), the ack says so
SYNTAX = """Slash commands (one per line; all but `help` and `status` need write permission on the repository):
- `/senpai pause`: stop opening new experiments; running jobs, reviews and verifications go on
- `/senpai resume`: open new experiments again (also after a patience pause)
- `/senpai caps key=value ...`: set caps: experiments, dollars, tokens, gpu_hours, cpu_hours (> 0), end (ISO time)
- `/senpai try key=value ...`: open this hypothesis for the next idle student, before any proposal
- `/senpai stop`: on an experiment PR: stop its job and close the PR
- `/senpai allow compute`: on an experiment PR: let it merge although it trains with more compute than senpai.yaml's tolerance
- `/senpai approve <fingerprint>`: on an experiment PR: approve the merge senpai asked for (head, base, verification)
- `/senpai reject <fingerprint> reason...`: on an experiment PR: close it instead, with your reason
- `/senpai help`: this list
- `/senpai status`: students, open experiments, live jobs, fleet caps and the forge's rate limit"""


class CommandError(ValueError):
    """A command line that cannot be applied; the message says why (it is shown to the human)."""


def command_lines(body: str) -> list[str]:
    """The `/senpai ...` lines of a message body, stripped, in order (empty: not a command message).

    The body is parsed as CommonMark (markdown-it-py), and only the lines of top-level paragraphs
    count: never a line inside fenced or indented code, an HTML comment (inline ones too), a block
    quote, a list or a heading. A line is rebuilt from its inline tokens (`_inline_lines`) and
    counts if it starts with text that starts with the word `/senpai`. A body over MAX_BODY
    characters, or one that holds raw HTML other than comments (`_raw_html`), is not read: nothing
    in it is a command."""
    if not body or len(body) > MAX_BODY:
        return []
    tokens = _MD.parse(body)
    if _raw_html(tokens):
        return []
    out, depth = [], 0  # depth: the blocks around a token, paragraphs aside (a quote, a list, a heading)
    for token in tokens:
        if token.type not in ("paragraph_open", "paragraph_close"):
            depth += token.nesting
        if token.type == "inline" and depth == 0 and token.children is not None:
            out += [line for line in _inline_lines(token.children) if _LINE.match(line)]
    return out


_COMMENTS = re.compile(r"(?:\s*<!--(?:(?!-->).)*-->)+\s*", re.DOTALL)  # HTML comments and nothing else


def _raw_html(tokens: list[Token]) -> bool:
    """Whether a parse holds raw HTML that is not only comments: an HTML block (`<details>`,
    `<div>`, a lone `<span>` line...) or an inline tag. Such HTML can fold text away on GitHub
    (`<details>`) or open an element the following paragraphs render inside, so none of them counts."""
    for t in tokens:
        if t.type == "html_block" and not _COMMENTS.fullmatch(t.content):
            return True
        if t.type == "inline" and any(c.type == "html_inline" and not _COMMENTS.fullmatch(c.content) for c in t.children or []):
            return True
    return False


def _inline_lines(children: list[Token]) -> list[str]:
    """The lines of one paragraph that start with text, stripped, rebuilt from its inline tokens
    (a line that starts with a code span, inline HTML, emphasis or a link is dropped)."""
    lines: list[list[str]] = [[]]
    first: list[str | None] = [None]  # the type of each line's first token that is not blank text
    for t in children:
        if t.type in ("softbreak", "hardbreak"):
            lines.append([])
            first.append(None)
            continue
        if first[-1] is None and (t.type != "text" or t.content.strip()):
            first[-1] = t.type
        # code spans keep their backticks; inline HTML is dropped; emphasis keeps its delimiters
        spans = {"text": t.content, "code_inline": f"{t.markup}{t.content}{t.markup}", "html_inline": ""}
        lines[-1].append(spans.get(t.type, t.markup))
    return ["".join(parts).strip() for parts, kind in zip(lines, first, strict=True) if kind == "text"]


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


def to_command(line: str, space: dict[str, ParamSpec] | None, on_pr: int | None) -> SteerCommand | str:
    """The command one line asks for, checked: a SteerCommand, or a query's verb (QUERIES). `space`
    is the target's params space (None if unknown), `on_pr` the PR the message was written on (None
    on an issue). Raises CommandError."""
    verb, words = parse_line(line)
    verb = RENAMED.get(verb, verb)
    if verb in (*QUERIES, "pause", "resume", "stop"):
        if words:
            raise CommandError(f"`{_quote(line)}`: `{verb}` takes no arguments")
        if verb == "stop" and on_pr is None:
            raise CommandError("`/senpai stop` works in a comment on the experiment PR to stop")
        if verb in QUERIES:
            return verb
        return SteerCommand(verb=verb, pr=on_pr if verb == "stop" else None)
    if verb == "allow":
        if [w.lower() for w in words] != ["compute"]:
            raise CommandError(f"`{_quote(line)}`: expected `/senpai allow compute`")
        if on_pr is None:
            raise CommandError("`/senpai allow compute` works in a comment on the experiment PR it allows")
        return SteerCommand(verb="allow", pr=on_pr)
    if verb in ("approve", "reject"):
        return _answer_request(line, verb, words, on_pr)
    if verb not in ("caps", "try"):
        raise CommandError(f"`{_quote(line)}`: unknown command `{_quote(verb)}`")
    args = _pairs(line, words)
    if verb == "caps":
        return _caps(line, args)
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


FINGERPRINT = re.compile(r"^[0-9a-f]{12}$")
MAX_REASON = 1000  # characters of a `/senpai reject` reason kept


def _answer_request(line: str, verb: str, words: list[str], on_pr: int | None) -> SteerCommand:
    """`/senpai approve <fingerprint>` or `/senpai reject <fingerprint> reason...`, on a PR. Raises CommandError."""
    usage = "`/senpai approve <fingerprint>`" if verb == "approve" else "`/senpai reject <fingerprint> reason...`"
    fp = words[0].lower() if words else ""
    if not FINGERPRINT.match(fp) or (verb == "approve" and len(words) != 1) or (verb == "reject" and len(words) < 2):
        raise CommandError(f"`{_quote(line)}`: expected {usage} (the 12 hex digits senpai's approval request names)")
    if on_pr is None:
        raise CommandError(f"{usage} works in a comment on the experiment PR that asks for it")
    reason = " ".join(words[1:])[:MAX_REASON] if verb == "reject" else None
    return SteerCommand(verb=verb, pr=on_pr, fingerprint=fp, reason=reason)


CAP_KEYS = {  # key -> (SteerCommand field, type, what it caps, the largest value taken)
    "experiments": ("experiments", int, "experiments in all", 1_000_000),
    "dollars": ("dollars", float, "LLM dollars", CAP_MOST["dollars"]),
    "tokens": ("tokens", int, "LLM tokens", CAP_MOST["tokens"]),
    "gpu_hours": ("gpu_hours", float, "GPU hours of jobs", CAP_MOST["gpu_hours"]),
    "cpu_hours": ("cpu_hours", float, "CPU-core hours of jobs", CAP_MOST["cpu_hours"]),
    "end": ("end_at", datetime, "the wall-clock end, ISO 8601 with a zone (2026-12-31T18:00Z)", None),
}
MAX_VALUE_CHARS = 40  # of one cap value: longer is no number or time anyone means


# how the harness config and the chart spell a cap: a key a person copies from there into the command
_CONFIG_SPELLING = {"end_at": "end", "endat": "end", "gpuhours": "gpu_hours", "cpuhours": "cpu_hours"}


def _nearest_key(key: str) -> str | None:
    """The cap key `key` was likely meant as (the config's spelling, or a near typo); None if none."""
    folded = key.lower()
    near = difflib.get_close_matches(folded, CAP_KEYS, n=1, cutoff=0.7)
    return _CONFIG_SPELLING.get(folded) or (near[0] if near else None)


def _caps(line: str, args: dict[str, str]) -> SteerCommand:
    """`/senpai caps key=value ...`: new fleet caps, each > 0 (a time: in the future is the
    wrapper's business, any aware time is taken). Raises CommandError."""
    unknown = sorted(set(args) - set(CAP_KEYS))
    if not args or unknown:
        near = [f"`{_quote(k)}` is no cap key: did you mean `{m}`?" for k in unknown if (m := _nearest_key(k))]
        raise CommandError(
            f"`{_quote(line)}`: expected `/senpai caps key=value ...` with keys {', '.join(CAP_KEYS)}"
            + "".join(f"; {n}" for n in near)
        )
    fields: dict[str, object] = {}
    for key, raw in args.items():
        name, kind, what, most = CAP_KEYS[key]
        if kind is datetime:
            try:  # a year 1 or 9999 with an offset overflows when moved to UTC
                when = datetime.fromisoformat(raw[:MAX_VALUE_CHARS]) if len(raw) <= MAX_VALUE_CHARS else None
                fields[name] = when.astimezone(UTC).isoformat(timespec="seconds") if when and when.tzinfo else None
            except (ValueError, OverflowError):
                fields[name] = None
            if fields[name] is None:
                raise CommandError(f"`{key}` must be {what}, got `{_quote(raw)}`")
            continue
        try:
            value = kind(raw) if len(raw) <= MAX_VALUE_CHARS else 0
        except (ValueError, OverflowError):
            value = 0
        if not (math.isfinite(value) and 0 < value <= most):
            whole = "whole " if kind is int else ""
            raise CommandError(f"`{key}` ({what}) must be a {whole}number > 0 and at most {most:,.0f}, got `{_quote(raw)}`")
        fields[name] = value
    return SteerCommand(verb=CAPS_VERB, **fields)


def renamed_notes(body: str) -> list[str]:
    """One note per renamed command (RENAMED) the command message `body` uses, naming its name now."""
    used = {verb for line in command_lines(body) if (verb := _verb(line)) in RENAMED}
    return [f"`/senpai {old}` is now `/senpai {RENAMED[old]}`: it was read as that" for old in sorted(used)]


def _verb(line: str) -> str | None:
    try:
        return parse_line(line)[0]
    except CommandError:
        return None


def parse_commands(body: str, space: dict[str, ParamSpec] | None, on_pr: int | None) -> list[SteerCommand | str]:
    """Every command of a command message, all checked, in order: a SteerCommand for each command
    that changes the steering state, a verb for each query (QUERIES). Raises CommandError (naming
    every bad line)."""
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
    """`text` safe inside an inline code span of a reply (no backticks, one line, bounded, no control
    or format character: a right-to-left override would reorder the rest of the reply's line)."""
    return visible(text.replace("`", "'").replace("\n", " ")[:200])
