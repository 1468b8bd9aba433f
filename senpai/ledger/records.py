"""Records: where a block counts.  Only what senpai rendered is a record (design §4).

A record is one text senpai posted, shaped by `record_text`:

    <prose, neutralised>

    <details><summary>senpai record</summary>

    ```senpai-<kind>
    <YAML>
    ```

    </details>

    <!-- senpai:<marker kind>:<key> -->

The block sits in a collapsed `<details>` so a PR page shows the prose (`senpai.ledger.comments`
renders it) and hides the YAML until asked.  Texts posted before that wrapper (the fence directly
before the marker) still read the same.  `read_record` parses the text as CommonMark
(markdown-it-py) and accepts a block only when the last top-level tokens are exactly one of those
two shapes: `<details>` opener, fence, `</details>`, marker; or fence, marker.  The marker's kind
must be the one that renders this block kind (`MARKERS`) and its key must name this very block
(`record_key`).  Every other fence is text: fences in blockquotes, lists, other fences or HTML
comments, `~~~` and indented code, any fence in prose, and a fence in any other HTML wrapper.
Prose cannot produce the shape: `neutral` (the one function every posted prose goes through)
escapes backtick and tilde runs that could open a fence and `<` (no HTML block, no `<details>`,
no comment, no marker).  Whose text it is (the bot's comment, the bot's
PR: `by_bot`) is the caller's check: see `experiment.read_experiment` and `inbox.steer_blocks`.
"""

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable

from markdown_it import MarkdownIt

from senpai.errors import LedgerFormatError
from senpai.forge.base import Comment, Issue, PullRequest
from senpai.ledger.blocks import (
    ApprovalRequest,
    Block,
    BudgetReport,
    Decision,
    Evidence,
    Hypothesis,
    Reapply,
    Steer,
    TurnCost,
    Verification,
    excerpt,
    parse_block,
    render,
)
from senpai.ledger.redact import redact

MAX_TEXT = 256 * 1024  # characters of one comment or body parsed for a record (GitHub caps them at 65,536)
MAX_PROSE = 16_000  # characters of neutralised prose in one posted text, so it stays under GitHub's cap
MARKERS: dict[str, type[Block]] = {
    "hypothesis": Hypothesis,  # the bot's PR body
    "evidence": Evidence,
    "verification": Verification,  # only the verifier's comment (transitions.record_verification)
    "decision": Decision,
    "budget": BudgetReport,
    "ack": Steer,  # the wrapper's acknowledgement of a slash-command message
    "approval": ApprovalRequest,  # the advisor's merge path asking a human (transitions.request_approval)
    "turn": TurnCost,  # what an openhands advisor turn spent (transitions.record_turn)
    "reapply": Reapply,  # the advisor's params written onto a moved base (transitions.record_reapply)
}
_MARKER = re.compile(r"<!-- senpai:([a-z]+):([0-9a-z:_-]{1,100}) -->")
_MARKER_AT_END = re.compile(_MARKER.pattern + r"\s*\Z")
_RUN = re.compile(r"`{3,}|~{3,}")
_MD = MarkdownIt("commonmark")
DETAILS_OPEN = "<details><summary>senpai record</summary>"
DETAILS_CLOSE = "</details>"


def by_bot(x: Comment | Issue | PullRequest, bot: str) -> bool:
    """True if the bot wrote `x` (`bot`: the login senpai writes as, `Forge.login`). The one test of
    whose text is senpai's own: only the bot's texts are records, acks and markers (anyone can copy
    a block or a marker into their own), and the bot's own words are never a human's message."""
    return x.user == bot


def edited(c: Comment) -> bool:
    """True if comment `c` changed after it was posted (GitHub's `updated_at` moved). senpai never
    edits its own comments, so an edited bot comment is no record, ack or answer of senpai's."""
    return c.updated_at != c.created_at


def bot_records[B: Block](comments: Iterable[Comment], bot: str, model: type[B]) -> list[tuple[Comment, B]]:
    """The `model` records among `comments` that count, each with its comment: the bot's (`bot`, its
    login), unedited since posted (`edited`: anyone could copy a record into their own comment, and
    a repository's writers can edit the bot's). An unreadable one (LedgerFormatError) is skipped: it
    counts nothing, and one bad comment never stops the reader. A comment without the record's
    fence tag (`senpai-<KIND>`) is not parsed: the wrapper reads every thread each refresh."""
    out = []
    for c in comments:
        if not by_bot(c, bot) or edited(c) or f"senpai-{model.KIND}" not in c.body:
            continue
        try:
            block = read_record(c.body)
        except LedgerFormatError:
            continue
        if isinstance(block, model):
            out.append((c, block))
    return out


def neutral(text: str) -> str:
    """`text` as Markdown prose that can open no fence, HTML block or comment, and forge no marker.

    Runs of three or more backticks or tildes get a backslash before each character (GitHub still
    shows them), `<` becomes `&lt;` (shown as `<`).  Shorter runs stay, so `code` spans still render.
    The result is at most MAX_PROSE characters plus a short note saying how long it was.
    """
    text = _RUN.sub(lambda m: "".join("\\" + ch for ch in m.group(0)), text.replace("<", "&lt;"))
    if len(text) <= MAX_PROSE:
        return text
    # a cut inside an escape leaves `&l` (shown as text) or a lone backslash (dropped): still inert
    return text[:MAX_PROSE].rstrip("\\") + f"\n\n(cut: {len(text)} characters)"


WORD_JOINER = "\u2060"
_MENTION = re.compile(r"(?<![\w`@])@(?=[A-Za-z0-9])")


def unmention(text: str) -> str:
    """`text` with no @mention GitHub would notify: a word joiner (U+2060) after each `@` that starts
    one (an e-mail address's `@` stays). For hostile text the bot posts; its own `@author` replies are
    written around it."""
    return _MENTION.sub("@" + WORD_JOINER, text)


_QUOTE_UNSAFE = re.compile(r"`+|~{3,}")
MAX_QUOTE = 300  # characters of a model's words quoted in a record or an issue


class _Invisible(dict):
    """A `str.translate` table: a control or format character (Unicode Cc, Cf: a terminal escape, NUL,
    a right-to-left override, a zero-width space) becomes a space, any other stays (cached per code
    point). The word joiner stays: `unmention` writes it, and it joins nothing a reader could misread."""

    def __missing__(self, cp: int) -> str:
        ch = chr(cp)
        self[cp] = out = " " if unicodedata.category(ch) in ("Cc", "Cf") and ch != WORD_JOINER else ch
        return out


_INVISIBLE = _Invisible()


def visible(text: str) -> str:
    """`text` with every control and format character (Unicode Cc, Cf but the word joiner) a space."""
    return text.translate(_INVISIBLE)


def quote(text: str, limit: int = MAX_QUOTE) -> str:
    """`text` (a model's answer, hostile) as one line of neutral prose to quote anywhere, in a
    record's YAML field or in posted prose: every backtick and every run of three or more tildes
    gone (no fence, no code span can open, so no `senpai-<kind>` block), `<` shown as `‹` (no HTML,
    no comment, no marker), every control and format character a space, whitespace flattened to
    single spaces, cut to `limit` characters with `...` after a cut, and no @mention (`unmention`).
    Empty if `text` holds nothing else."""
    flat = unmention(" ".join(_QUOTE_UNSAFE.sub(" ", text).replace("<", "\u2039").translate(_INVISIBLE).split()))
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "..."


def marker(kind: str, key: str) -> str:
    """The hidden HTML comment that ends a text senpai posted: `<!-- senpai:<kind>:<key> -->`."""
    return f"<!-- senpai:{kind}:{key} -->"


def hashed(key: str) -> str:
    """16 hex characters naming `key` in a marker."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def digest(block: Block) -> str:
    """16 hex characters naming `block`'s content: the SHA-256 of its JSON without default values (a
    field added later with a default leaves the digest of an older block as it was)."""
    return hashed(block.model_dump_json(exclude_defaults=True))


def record_key(block: Block) -> str:
    """The marker key of `block`'s record: what makes it one record (one evidence per attempt, ...)."""
    match block:
        case Steer():
            return block.message
        case Hypothesis():
            return hashed(block.id)
        case Evidence():
            return hashed(f"{block.pr}:{block.attempt}")
        case Verification():
            return hashed(f"{block.candidate}:{block.baseline}")
        case Decision():
            return hashed(f"{block.pr}:{block.head}:{block.verdict}")
        case BudgetReport():
            return hashed(f"{block.role}:{block.pr}:{block.revision}")
        case ApprovalRequest():
            return block.fingerprint
        case Reapply():
            return hashed(f"{block.pr}:{block.head}")
        case TurnCost():  # a resumed run that made more calls is a record of its own; a replay is not
            return hashed(f"{block.key}:{block.spent.llm_calls}")
    raise TypeError(f"{type(block).__name__} is not a record")


def record_marker(block: Block) -> str:
    kind = next(k for k, m in MARKERS.items() if isinstance(block, m))
    return marker(kind, record_key(block))


def record_tail(block: Block) -> str:
    """`block` in its collapsed `<details>` wrapper, then its marker: what ends its record."""
    return f"{DETAILS_OPEN}\n\n{render(block)}\n\n{DETAILS_CLOSE}\n\n{record_marker(block)}"


def record_text(block: Block, prose: str) -> str:
    """The text to post for `block`: `prose` (redacted, neutralised), then `record_tail(block)`."""
    return f"{neutral(redact(prose.strip()))}\n\n{record_tail(block)}"


def _html(token, content: str) -> bool:
    return token.type == "html_block" and token.level == 0 and token.content.strip() == content


def _tail(text: str):
    """The marker match and the fence before it that end `text`, each None when absent.

    Raises LedgerFormatError for a text over MAX_TEXT that ends in a record's marker (a record too
    big to read); any other oversize text (a reply, a human's text) is no record.
    """
    if len(text) > MAX_TEXT:
        end = _MARKER_AT_END.search(text[-300:])
        if end and end.group(1) in MARKERS:
            raise LedgerFormatError(f"a text of {len(text)} characters (at most {MAX_TEXT}) ends in a record's marker")
        return None, None
    tokens = _MD.parse(text)
    last = tokens[-1] if tokens else None
    if last is None or last.type != "html_block" or last.level != 0:
        return None, None
    found = _MARKER.fullmatch(last.content.strip())
    # the shape record_tail renders (fence wrapped in <details>), or the older bare fence after prose
    wrapped = len(tokens) >= 4 and _html(tokens[-2], DETAILS_CLOSE) and _html(tokens[-4], DETAILS_OPEN)
    bare = len(tokens) == 2 or (len(tokens) > 2 and tokens[-3].type != "html_block")
    before = tokens[-3] if wrapped else tokens[-2] if bare else None
    fence = before if before is not None and before.type == "fence" and before.level == 0 else None
    return found, fence


@functools.lru_cache(maxsize=2048)  # the wrapper asks for every steering issue's body each tick
def html_blocks(text: str) -> frozenset[str]:
    """The top-level HTML blocks of `text` (CommonMark), each stripped: where a marker senpai wrote
    after its prose stands (`escalation.marked`). A marker's text anywhere else (in a fence, such as
    a model's tool call quoted raw in a turn-limit report's YAML, or in prose) is none. Empty for a
    text over MAX_TEXT, which senpai never posts."""
    if len(text) > MAX_TEXT:
        return frozenset()
    return frozenset(t.content.strip() for t in _MD.parse(text) if t.type == "html_block" and t.level == 0)


@functools.lru_cache(maxsize=2048)  # replied() asks for every bot comment on every read
def marker_of(text: str) -> str | None:
    """The marker that ends `text` as its last top-level token, or None (text in prose is not one,
    nor is any text over MAX_TEXT, which senpai never posts).  Never raises."""
    if len(text) > MAX_TEXT:
        return None
    found, _ = _tail(text)
    return found.group(0) if found else None


@functools.lru_cache(maxsize=2048)  # the wrapper re-reads unchanged comments every refresh; blocks are frozen
def read_record(text: str) -> Block | None:
    """The record senpai rendered in `text`, or None if `text` has none (a reply, a human's text).

    Raises LedgerFormatError if the record's block is invalid (YAML, limits, schema) or its marker
    names another block.
    """
    found, fence = _tail(text)
    model = MARKERS.get(found.group(1)) if found else None
    if found is None or model is None or fence is None or fence.markup[0] != "`" or fence.info != f"senpai-{model.KIND}":
        return None
    block = parse_block(model, fence.content)
    if record_key(block) != found.group(2):
        raise LedgerFormatError(f"the {excerpt(found.group(0), 60)} record holds another senpai-{model.KIND} block")
    return block
