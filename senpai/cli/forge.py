"""`senpai forge`: run the local forge, a GitHub-REST-compatible server for one machine, no keys."""

import re
import sys
import tempfile
from pathlib import Path

import click

BOT, HUMAN = "senpai", "human"  # the users `senpai forge serve` makes tokens for on a new data folder
LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,38}")


@click.group("forge", context_settings={"help_option_names": ["-h", "--help"]})  # also when a test invokes it alone
def forge() -> None:
    """The local forge: GitHub REST at the server root, git smart HTTP under /git/.

    \b
    Example:
      senpai forge serve --data ./forge-data --port 8123
    """


@forge.command("serve")
@click.option(
    "--data",
    "data_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the forge's SQLite file and bare repositories (created if missing).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="TCP port; 0 picks a free one.")
@click.option(
    "--protect",
    default="main,advisor",
    show_default=True,
    help="Comma-separated protected branches (every repository): no delete or force-push; only admins push.",
)
@click.option(
    "--rate-limit",
    type=click.IntRange(1),
    default=None,
    help="Charged REST requests per token an hour, answered with GitHub's X-RateLimit-* headers and its 403 once spent.",
)
@click.option(
    "--writes-per-minute",
    type=click.IntRange(0),
    default=80,
    show_default=True,
    help="REST writes one user may make a minute (GitHub's secondary limit), then 403 with Retry-After; 0: no limit.",
)
@click.option(
    "--max-comments",
    type=click.IntRange(0),
    default=2500,
    show_default=True,
    help="Comments one issue or PR may hold (GitHub's cap), then 403; 0: no limit.",
)
@click.option(
    "--require-approvals",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Approving reviews (from users with write access) a PR needs to merge into a protected branch, "
    "as GitHub's branch protection asks; until then its merge answers 405.",
)
def serve_cmd(
    data_dir: Path,
    host: str,
    port: int,
    protect: str,
    rate_limit: int | None,
    writes_per_minute: int,
    max_comments: int,
    require_approvals: int,
) -> None:
    """Serve until SIGTERM or Ctrl-C. Prints `url: <base_url>` and `data: <dir>` once listening.

    On a data folder with no tokens yet, creates the bot's token (user `senpai`, role owner) and a
    human's (user `human`, role collaborator) and prints them once as `bot_token:` and
    `human_token:` (only their hashes are stored; `senpai forge token` makes more).

    \b
    Example:
      senpai forge serve --data ./forge-data --port 8123
    """
    from senpai.forge.localforge.ratelimit import WriteLimits
    from senpai.forge.localforge.server import LocalForgeServer, serve

    def ready(server: LocalForgeServer) -> None:
        click.echo(f"url: {server.url}")
        click.echo(f"data: {server.data_dir.resolve()}")
        if not server.store.has_tokens():
            click.echo(f"bot_token: {server.store.add_token(BOT, 'owner')}")
            click.echo(f"human_token: {server.store.add_token(HUMAN, 'collaborator')}")
        sys.stdout.flush()

    protected = tuple(b.strip() for b in protect.split(",") if b.strip())
    limits = WriteLimits(writes_per_minute or None, max_comments or None)
    serve(
        data_dir, host, port, on_ready=ready, protected=protected, rate_limit=rate_limit, write_limits=limits,
        required_approvals=require_approvals,
    )  # fmt: skip
    click.echo("stopped", err=True)


@forge.command("token")
@click.option(
    "--data",
    "data_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the forge (as given to `senpai forge serve`; it may be running).",
)
@click.option("--user", "login", default=BOT, show_default=True, help="Login the token acts as.")
@click.option(
    "--role",
    type=click.Choice(["owner", "collaborator", "member", "read"]),
    default="owner",
    show_default=True,
    help="owner: admin of every repository; collaborator: write to every repository; member: an org member "
    "(author_association MEMBER) who only reads; read: issues, comments and PRs.",
)
@click.option("--new", "new_forge", is_flag=True, help="Start a new forge in --data if it holds none (else that is an error).")
def token_cmd(data_dir: Path, login: str, role: str, new_forge: bool) -> None:
    """Create a token for USER with ROLE and print it (the only time it is shown).

    \b
    Example:
      senpai forge token --data ./forge-data --user alice --role collaborator
    """
    from senpai.errors import ConfigError
    from senpai.forge.localforge.store import Store

    if not LOGIN.fullmatch(login):
        raise click.BadParameter("letters, digits, '-' and '_' (at most 39)", param_hint="--user")
    if not new_forge and not (data_dir / "forge.sqlite3").is_file():  # a typo'd --data must not start a forge
        raise ConfigError(
            f"--data {data_dir}: no forge there (no forge.sqlite3): check the folder given to `senpai forge serve --data`, "
            "or pass --new to start a forge there with this token"
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(data_dir / "forge.sqlite3")
    try:
        click.echo(store.add_token(login, role))
    finally:
        store.close()


@forge.command("seed")
@click.option("--url", "base_url", required=True, help="REST root of the forge, e.g. http://127.0.0.1:8123.")
@click.option("--repo", default="senpai/digits", show_default=True, help="owner/name of the repository to create.")
@click.option(
    "--example",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder pushed as the first commit [the bundled examples/digits].",
)
@click.option("--base-branch", default="advisor", show_default=True, help="Research base branch, pushed beside main.")
@click.option("--token-env", default="GITHUB_TOKEN", show_default=True, help="Env var holding the token (the forge's bot_token).")
def seed_cmd(base_url: str, repo: str, example: Path | None, base_branch: str, token_env: str) -> None:
    """Create REPO on a forge and push EXAMPLE as `main` and the research base branch.

    For a forge that runs elsewhere (e.g. in a cluster behind `kubectl port-forward`). Prints
    `repo: <owner/name>` and `clone_url: <url>`. Exit 4 if a git step fails.

    \b
    Example:
      GITHUB_TOKEN=<bot_token> senpai forge seed --url http://127.0.0.1:8123 --repo senpai/digits
    """
    from pydantic import ValidationError

    from senpai.cli.seed import EXAMPLE, seed_target
    from senpai.config.harness import ForgeSettings
    from senpai.errors import ConfigError

    try:
        settings = ForgeSettings(base_url=base_url, repo=repo, token_env=token_env, base_branch=base_branch)
    except ValidationError as e:
        raise ConfigError(f"--repo {repo!r}: {e.errors()[0]['msg']}") from None
    with tempfile.TemporaryDirectory(prefix="senpai-seed-") as tmp:
        clone_url = seed_target(settings, example or EXAMPLE, Path(tmp) / "seed")
    click.echo(f"repo: {repo}\nclone_url: {clone_url}")
