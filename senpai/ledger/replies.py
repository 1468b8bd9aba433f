"""Replies to humans: the one way anything in senpai answers a steering message.

The wrapper's acknowledgements (kind `ack`: "applied ...", "delivered to ...") and the agents'
answers (kind `reply`, the `reply_to_human` tool and the search runtime) both post through
`reply_to_human`, so each message version gets at most one acknowledgement and one answer,
whoever posts them and however often a crashed step is replayed.
"""

from typing import Literal

from senpai.forge.base import Comment
from senpai.forge.port import ForgeReadWrite
from senpai.ledger.blocks import Steer
from senpai.ledger.comments import prose
from senpai.ledger.events import Message, message_ref
from senpai.ledger.records import by_bot, edited, marker, marker_of, record_marker, record_tail

ReplyKind = Literal["reply", "ack"]


def reply_marker(m: Message, kind: ReplyKind = "reply") -> str:
    """Hidden marker naming the message version (and the kind of answer) a comment is."""
    return marker(kind, message_ref(m))


def replied(comments: list[Comment], m: Message, bot: str, kind: ReplyKind = "reply") -> bool:
    """True if the bot (login `bot`) already posted a `kind` answer to this version of `m` and nobody
    edited it since (`records.edited`: then it is answered again)."""
    mark = reply_marker(m, kind)
    return any(by_bot(c, bot) and not edited(c) and marker_of(c.body) == mark for c in comments)


def reply_to_human(
    forge: ForgeReadWrite, m: Message, text: str, kind: ReplyKind = "reply", record: Steer | None = None
) -> Comment | None:
    """Answer `m` on the issue or PR it came from, quoting who it answers.

    `text` (an agent's words, or the wrapper's with a human's quoted) is redacted and neutralised
    (`comments.prose`, `templates/reply.md.j2`): it is never a record.  `record`, the wrapper's
    `senpai-steer` block for an ack, follows it collapsed with its marker (`records.record_tail`),
    so the comment is that block's record (`records.read_record`); its key must be `m`'s ref.
    Idempotent per (message version, kind): returns None (posts nothing) if already answered.
    GitHub REST: GET then POST /repos/{owner}/{repo}/issues/{number}/comments.
    """
    if record is not None and record_marker(record) != reply_marker(m, kind):  # replied() would never see it
        raise ValueError(f"the {kind} of {message_ref(m)} carries the record of another message ({record.message})")
    if replied(forge.list_comments(m.number), m, forge.login, kind):
        return None
    tail = record_tail(record) if record is not None else reply_marker(m, kind)
    body = f"{prose('reply.md.j2', author=m.author, text=text.strip())}\n\n{tail}"
    return forge.create_comment(m.number, body)
