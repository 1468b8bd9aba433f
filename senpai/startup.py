"""Environment defaults a senpai process needs before the libraries that read them are imported.

The entry points set them, not an import (importing any senpai module changes nothing in
os.environ): `senpai.cli.main.main`, for every command and every job, and the local fleet for the
supervisors it starts (`python -m senpai.fleet.supervise` builds pydantic models as it imports).
Each is only a default: a value already in the environment wins.
"""

import os
from collections.abc import MutableMapping

DEFAULTS = {
    # pydantic scans the entry points of every installed distribution for plugins when it builds its
    # first model: 0.1-0.15 s of CPU in every senpai process, for plugins senpai does not use. Set
    # PYDANTIC_DISABLE_PLUGINS="" beforehand to load them.
    "PYDANTIC_DISABLE_PLUGINS": "__all__",
    # litellm fetches its price map from the network at import unless told to use its bundled copy
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "OPENHANDS_SUPPRESS_BANNER": "1",  # the OpenHands SDK prints a banner at import
}


def apply(env: MutableMapping[str, str] = os.environ) -> None:
    """Set in `env` (os.environ: this process and its children) each of DEFAULTS it does not hold."""
    for name, value in DEFAULTS.items():
        env.setdefault(name, value)
