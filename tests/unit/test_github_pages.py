"""The adapter's conditional listing pages (`senpai.forge.github.reader`), as GitHub pages them: its
Link headers name the repository by id (`/repositories/<id>/pulls?page=2`), which the local forge,
whose pages the contract tests read, never does. A write (`written`) must drop the validator of
every page of the listings it changes, the later pages too."""

from senpai.config.harness import ForgeSettings
from senpai.forge.github.reader import GitHubReader

NEXT = '<https://api.github.com/repositories/1300192/pulls?state=open&per_page=2&page=2>; rel="next"'


def _pull(n: int) -> dict:
    return {
        "number": n, "title": "t", "body": "", "state": "open", "head": {"ref": f"h{n}", "sha": "a" * 40},
        "base": {"ref": "main"}, "labels": [], "user": {"login": "u"}, "author_association": "NONE",
        "html_url": f"http://x/o/r/pull/{n}", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
    }  # fmt: skip


class TwoPages:
    """The part of `GitHubHttp` a listing uses: two pages of open PRs, each answered 304 to its ETag."""

    settings = ForgeSettings(repo="o/r")
    repo = None
    per_page = 2

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []  # (URL, the validator sent)

    def call(self, what, fn, merge=False):
        return fn()

    def get(self, url, params, etag=None):
        self.sent.append((url, etag))
        first = params is not None
        answer = {"etag": '"p1"' if first else '"p2"', **({"link": NEXT} if first else {})}
        items = [_pull(1), _pull(2)] if first else [_pull(3)]
        return (304, answer, None) if etag else (200, answer, items)


def test_a_write_drops_the_validator_of_every_page_of_the_listing_it_changes():
    http = TwoPages()
    reader = GitHubReader(http)
    assert [p.number for p in reader.list_pulls()] == [1, 2, 3]
    http.sent.clear()
    assert [p.number for p in reader.list_pulls()] == [1, 2, 3]  # both pages from their ETags
    assert [etag for _, etag in http.sent] == ['"p1"', '"p2"']
    http.sent.clear()
    reader.written(3)  # a write to PR #3, listed on page 2
    assert [p.number for p in reader.list_pulls()] == [1, 2, 3]
    assert http.sent == [("/repos/o/r/pulls", None), (NEXT[1 : NEXT.index(">")], None)]  # both read whole
