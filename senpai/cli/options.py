"""Options shared by several commands."""

import click


class _HarnessConfig(click.Path):
    """A harness config path whose absence says both ways to give one (click prints it after "Missing option")."""

    def get_missing_message(self, param: click.Parameter, ctx: click.Context | None) -> str:
        return "Give the harness config YAML as --config FILE, or set $SENPAI_CONFIG to its path (a demo's: <out>/harness.yaml)."


config_option = click.option(
    "--config",
    "config_path",
    envvar="SENPAI_CONFIG",
    required=True,
    type=_HarnessConfig(dir_okay=False),
    help="Harness config YAML; without --config, the file $SENPAI_CONFIG names.",
)

local_forge_option = click.option(
    "--local-forge",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Serve this local forge data dir on a free port for the duration (e.g. after `senpai demo`).",
)
