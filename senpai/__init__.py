"""senpai: a self-improvement research harness.

The ledger (forge PRs plus tracker runs) is the truth; every other store is a cache.
"""

import os

__version__ = "0.1.0"

# pydantic looks for plugins in the entry points of every installed distribution when it builds its
# first model: 0.1-0.15 s of CPU in every senpai process (each job, each local supervisor), for
# plugins senpai does not use. Set PYDANTIC_DISABLE_PLUGINS="" beforehand to load them.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
