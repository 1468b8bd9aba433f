"""Options shared by several commands."""

import click

config_option = click.option(
    "--config",
    "config_path",
    envvar="SENPAI_CONFIG",
    required=True,
    type=click.Path(dir_okay=False),
    help="Harness config YAML (env: SENPAI_CONFIG).",
)
