"""Replies to humans: the one way anything in senpai answers a steering message.

The wrapper's acknowledgements of slash commands and the agents' `reply_to_human` tool both post
through `reply_to_human`, so each message version is answered once, whoever answers it.
"""

from senpai.forge.base import Comment, Forge
from senpai.ledger.events import Message


def reply_marker(m: Message) -> str:
    """Hidden marker naming the message version a reply answers."""
    return f"<!-- senpai:reply:{m.number}:{m.comment_id or 0}:{m.version} -->"


def replied(comments: list[Comment], m: Message, bot: str) -> bool:
    """True if the bot (login `bot`) already answered this version of `m`."""
    marker = reply_marker(m)
    return any(c.user == bot and marker in c.body for c in comments)


def reply_to_human(forge: Forge, m: Message, text: str) -> Comment | None:
    """Answer `m` on the issue or PR it came from, quoting who it answers.

    Idempotent per message version: returns None (posts nothing) if already answered.
    GitHub REST: GET then POST /repos/{owner}/{repo}/issues/{number}/comments.
    """
    if replied(forge.list_comments(m.number), m, forge.login):
        return None
    return forge.create_comment(m.number, f"@{m.author} {text.strip()}\n\n{reply_marker(m)}")
