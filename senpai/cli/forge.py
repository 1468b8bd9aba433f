"""`senpai forge`: run the local forge, a GitHub-REST-compatible server for one machine, no keys."""

import sys
from pathlib import Path

import click


@click.group("forge")
def forge() -> None:
    """The local forge: GitHub REST at the server root, git smart HTTP under /git/."""


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
def serve_cmd(data_dir: Path, host: str, port: int) -> None:
    """Serve until SIGTERM or Ctrl-C. Prints `url: <base_url>` and `data: <dir>` once listening."""
    from senpai.forge.localforge.server import LocalForgeServer, serve

    def ready(server: LocalForgeServer) -> None:
        click.echo(f"url: {server.url}")
        click.echo(f"data: {server.data_dir.resolve()}")
        sys.stdout.flush()

    serve(data_dir, host, port, on_ready=ready)
    click.echo("stopped", err=True)
