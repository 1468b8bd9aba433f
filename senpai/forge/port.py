"""Forge port: its three parts together (`Forge`, what the adapter implements), and the two pairs
that a consumer needing two parts is typed with."""

from typing import Protocol

from senpai.forge.admin import ForgeAdmin
from senpai.forge.read import ForgeReader
from senpai.forge.write import ForgeWriter


class ForgeReadWrite(ForgeReader, ForgeWriter, Protocol):
    """What a writer holds: it reads what it is about to change (a PR's labels, the bot's comments
    already posted, an issue by its marker). `senpai.ledger.transitions`, `replies`, `escalation`,
    the wrapper's Dispatcher and lease, and the jobs, which write through `transitions`."""


class ForgeReadAdmin(ForgeReader, ForgeAdmin, Protocol):
    """What `senpai preflight` and init hold: the reads that check the base branch, and the admin part."""


class Forge(ForgeReader, ForgeWriter, ForgeAdmin, Protocol):
    """Port over one repository on a GitHub-compatible forge: the three parts above, as the one adapter
    (`senpai.forge.github.GitHubForge`) implements them and the wiring builds it. A consumer that only
    reads is typed with `ForgeReader`."""
