"""`senpai validate DIR`: check a target repository's senpai.yaml before pointing senpai at it."""

from pathlib import Path

import click

from senpai.config.target import load_target


@click.command()
@click.argument("repo", type=click.Path(exists=True, file_okay=False), default=".")
def validate(repo: str) -> None:
    """Validate REPO/senpai.yaml; exit 2 with the file, field and expectation if it is bad."""
    t = load_target(Path(repo))
    click.echo(f"name: {t.name}\nmetric: {t.metric.name} ({t.metric.direction})\nparams: {', '.join(t.params.space)}")
    click.echo(f"protected: {', '.join(t.protected) or '(none)'}\nholdout: {t.holdout.command if t.holdout else '(none)'}")
