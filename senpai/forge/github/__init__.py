"""The one forge adapter: GitHub REST through PyGithub, for github.com, GHES and the local forge.

This package is the only code that imports `github`. It is split along the port's seam, its parts
sharing one client (`http.GitHubHttp`: one request count, retries, error translation, converters):

    reader.GitHubReader  ForgeReader: conditional GETs with ETag pages, memo/recall, listings, reads
    writer.GitHubWriter  ForgeWriter: PyGithub writes with idempotent retries; each tells the reader
                         first (`GitHubReader.written`), so that no cached page hides it
    admin.GitHubAdmin    ForgeAdmin: access and labels; `create_repository`

`GitHubForge` is the three over one client, the `Forge` the wiring builds: it inherits each part's
methods (their names do not overlap; the state they share, `settings`, `_http` and `_repo`, is the
one client's), so nothing is forwarded by hand. A command that only reads builds
`GitHubReader(GitHubHttp(...))` alone (`senpai.cli.wiring.make_reader`).
"""

from typing import Any

from senpai.config.harness import ForgeSettings
from senpai.forge.github.admin import GitHubAdmin
from senpai.forge.github.http import GitHubHttp
from senpai.forge.github.reader import GitHubReader
from senpai.forge.github.writer import GitHubWriter


class GitHubForge(GitHubReader, GitHubWriter, GitHubAdmin):
    """`Forge` over one repository (`settings.repo`): the reader, writer and admin parts over one
    `GitHubHttp` client, so one request count (`calls`) covers them all.

    Args:
        settings: base_url and owner/name of the repository.
        token: API token; None reads `settings.token_env`.
        client: `GitHubHttp`'s keyword arguments (attempts, backoff, max_wait, timeout, sleep,
            per_page, user_agent), its defaults where left out.
    """

    def __init__(self, settings: ForgeSettings, token: str | None = None, **client: Any) -> None:
        http = GitHubHttp(settings, token, **client)
        GitHubReader.__init__(self, http)
        GitHubWriter.__init__(self, http, self.written)
        GitHubAdmin.__init__(self, http)
