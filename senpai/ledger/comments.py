"""The words of the texts senpai posts: Jinja2 templates with one discipline for outside values.

The templates (`senpai/ledger/templates/*.md.j2`, package data) write the prose a human reads
first: a headline, a Markdown table of the numbers, the free texts.  `records.record_text` then
adds the collapsed machine block and its marker.  Every value a template prints goes through the
Environment's `finalize`: it is redacted and neutralised (`records.neutral`: no fence, HTML or
marker can come out of it), so a template cannot forget to.  Only what this module's filters
return (`Safe`: numbers, durations, dollars, commit shas, run links and table cells it built
from checked shapes) is printed as is; anything a template computes from a value (`~`, `|upper`,
jinja's own `|safe`) is a plain string again and is neutralised.  `prose` neutralises the whole
text once more (neutral is idempotent on its own output), so a value joined with the template's
own backticks opens no fence either: templates write Markdown, never HTML.
"""

import math
import re
from collections.abc import Iterable

from jinja2 import Environment, PackageLoader, StrictUndefined

from senpai.ledger.blocks import RunRef
from senpai.ledger.records import neutral, unmention
from senpai.ledger.redact import redact

DASH = "—"  # a table cell with no value
_SHA = re.compile(r"[0-9a-f]{7,64}")
_URL = re.compile(r"https?://[^\s()<>\[\]`\\]{1,500}")


class Safe(str):
    """Text this module formatted itself (numbers, checked shapes): templates print it unchanged."""


def _finalize(value: object) -> str:
    if isinstance(value, Safe):
        return value
    if value is None:
        return DASH
    return unmention(neutral(redact(str(value))))


def cell(value: object, limit: int | None = None) -> Safe:
    """`value` as inert inline Markdown on one line, at most `limit` characters (cut with …):
    redacted, backslashes doubled, `neutral` (no fence, HTML or marker), `unmention` (no @mention), then `|`, `[` and
    `]` escaped, so it cannot end a table cell or become a link. None or empty → —."""
    if value is None:
        return Safe(DASH)
    text = " ".join(str(value).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    text = unmention(neutral(redact(text.replace("\\", "\\\\"))))
    return Safe(text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]") or DASH)


def number(x: float | None) -> Safe:
    """A metric value for people: 3 significant digits below 1 (0.9503 → 0.950), 3 decimals up to
    1,000, whole numbers with thousands separators above; None → —."""
    if x is None:
        return Safe(DASH)
    if not math.isfinite(x):
        return Safe(str(x))
    size = abs(x)
    if size >= 1000:
        return Safe(f"{x:,.0f}")
    if size >= 1 or size == 0:
        return Safe(f"{x:.3f}")
    return Safe(f"{x:#.3g}")


def signed(x: float | None) -> Safe:
    """`number` with an explicit sign (+0.147, -0.020); None → —."""
    if x is None or not math.isfinite(x):
        return number(x)
    return Safe(("+" if x >= 0 else "-") + number(abs(x)))


def duration(seconds: float | None) -> Safe:
    """Seconds for people: 0.4 s, 42 s, 4 min 12 s, 15 min, 2 h 05 min; a negative one (overdue)
    with a leading -; None → —."""
    if seconds is None or not math.isfinite(seconds):
        return number(seconds)
    if seconds < 0:
        return Safe("-" + duration(-seconds))
    if seconds == 0:
        return Safe("0 s")
    if seconds < 10:
        return Safe(f"{seconds:.1f} s")
    whole = round(seconds)
    if whole < 60:
        return Safe(f"{whole} s")
    if whole < 3600:
        return Safe(f"{whole // 60} min" + (f" {whole % 60} s" if whole % 60 else ""))
    return Safe(f"{whole // 3600:,} h {whole % 3600 // 60:02d} min")


def dollars(x: float | None) -> Safe:
    """Dollars for people: $0.42, $1,234.50; under a cent $0.0012; None → —."""
    if x is None or not math.isfinite(x):
        return number(x)
    return Safe(f"${x:,.2f}" if x >= 0.01 or x == 0 else f"${x:.2g}")


def count(n: int | float | None) -> Safe:
    """A count with thousands separators (12,345); None → —."""
    return Safe(DASH) if n is None else Safe(f"{round(n):,}")


def sha(text: str | None) -> Safe:
    """A commit's first 8 hex digits; any other text as a `cell`."""
    if text is not None and _SHA.fullmatch(text):
        return Safe(text[:8])
    return cell(text)


def runs(refs: Iterable[RunRef]) -> Safe:
    """Each run as a Markdown link `[id](url)` when its url is a plain http(s) URL, else its id; — if none."""
    out = []
    for r in refs:
        name = cell(r.id)
        out.append(f"[{name}]({r.url})" if r.url and _URL.fullmatch(r.url) else name)
    return Safe(", ".join(out) or DASH)


def params(point: dict) -> Safe:
    """A params point as one table cell: `lr=0.01, units=64` (a `cell`); — if empty."""
    return cell(", ".join(f"{k}={v}" for k, v in point.items()) or None)


_ENV = Environment(
    loader=PackageLoader("senpai.ledger", "templates"),
    autoescape=False,  # Markdown, not HTML: finalize is the escaping
    finalize=_finalize,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters.update(
    cell=cell, number=number, signed=signed, duration=duration, dollars=dollars, count=count, sha=sha, runs=runs, params=params
)


def prose(template: str, **values: object) -> str:
    """The prose of template `template` (a file name under senpai/ledger/templates/) for `values`,
    neutralised (`records.neutral`, so at most MAX_PROSE characters plus a note).

    Raises jinja2.TemplateNotFound for an unknown name and jinja2.UndefinedError when the
    template uses a value not given (a bug, not an input).
    """
    return neutral(_ENV.get_template(template).render(**values).strip())
