"""Shared fixtures. Tests run W&B offline; a Forge is the real local forge on 127.0.0.1 or its in-memory fake."""

import os

import pytest

os.environ["WANDB_MODE"] = "offline"
os.environ.setdefault("WANDB_SILENT", "true")

from fake_forge import fake_forge  # noqa: E402,F401  (fixtures)
from forge_fixtures import forge_repo, local_forge  # noqa: E402,F401  (fixtures)
from k8s_fixtures import apiserver  # noqa: E402,F401  (fixtures)
from llm_server import llm_server  # noqa: E402,F401  (fixtures)
from long_first import pytest_collection_modifyitems, pytest_configure_node  # noqa: E402,F401  (hooks)


@pytest.fixture(autouse=True)
def _held_secrets():
    """The secrets this process holds (`senpai.config.credentials`) are each test's own: a wrapper a
    test builds in-process adopts the token it was given, and the next test must not inherit it."""
    from senpai.config import credentials

    saved = credentials.held()
    yield
    credentials._held.clear()
    credentials._held.update(saved)
