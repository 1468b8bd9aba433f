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

local_forge_option = click.option(
    "--local-forge",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Serve this local forge data dir on a free port for the duration (e.g. after `senpai demo`).",
)
