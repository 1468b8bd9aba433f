"""Event ids: what the constructors build, `parse_event_id` reads back, and nothing else."""

import pytest

from senpai.ledger.events import EventId, Message, idle_event, message_event, parse_event_id, pr_event, try_event

HEAD, BASE = "1" * 40, "b" * 40
MESSAGE = Message(number=7, comment_id=3, author="alice", association="OWNER", body="hi", version="v1")


@pytest.mark.parametrize(
    ("event", "id_", "parts"),
    [
        (pr_event("review", 12, HEAD, "/a1d0"), f"review:pr-12@{HEAD}/a1d0", EventId("review", 12, HEAD, "/a1d0")),
        (pr_event("stale", 12, HEAD, "/a2d1"), f"stale:pr-12@{HEAD}/a2d1", EventId("stale", 12, HEAD, "/a2d1")),
        (
            pr_event("verified", 12, HEAD, "/a1d0", base=BASE),
            f"verified:pr-12@{HEAD}/a1d0..{BASE}",
            EventId("verified", 12, HEAD, "/a1d0", BASE),
        ),
        (idle_event("ada", BASE, 3), f"idle:ada@{BASE}:3", EventId("idle", base=BASE, student="ada", experiments=3)),
        (
            idle_event("ada", BASE, 3, resolved=1),  # a failed measurement's issue closed: measure the base again
            f"idle:ada@{BASE}:3/1",
            EventId("idle", base=BASE, student="ada", experiments=3, resolved=1),
        ),
        (try_event("9:1:v/0", "ada", {"lr": 0.1}, "alice"), "try:9:1:v/0", EventId("try", ref="9:1:v/0")),
        (message_event(MESSAGE, None), "message:7:3:v1", EventId("message", ref="7:3:v1")),
    ],
)
def test_each_constructor_builds_the_documented_id_and_the_parser_reads_its_parts_back(event, id_, parts):
    assert event.id == id_ and event.kind == parts.kind
    assert parse_event_id(event.id) == parts
    assert (event.pr, event.head) == (parts.pr, parts.head)  # the event carries what its id names


@pytest.mark.parametrize(
    "bad",
    ["", "review:pr-x@h/a1d0", f"review:pr-1@{HEAD}", f"verified:pr-1@{HEAD}/a1d0", "idle:ada", f"idle:ada@{BASE}:3/", "nope:1"],
)
def test_anything_else_is_not_an_event_id(bad):
    with pytest.raises(ValueError, match="not an event id"):
        parse_event_id(bad)
