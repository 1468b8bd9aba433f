"""senpai: a self-improvement research harness.

The ledger (forge PRs plus tracker runs) is the truth; every other store is a cache.
"""

__version__ = "0.1.0"
