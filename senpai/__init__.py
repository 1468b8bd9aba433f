"""senpai: a self-improvement research harness.

The ledger (forge PRs plus tracker runs) is the truth; every other store is a cache.
"""

import os as _os

__version__ = "0.1.0"

if "SENPAI_SECRETS_FD" in _os.environ:  # handed secrets (`senpai.config.credentials`): unreadable in /proc from here on
    from senpai.config.credentials import set_not_dumpable as _set_not_dumpable

    _set_not_dumpable()
