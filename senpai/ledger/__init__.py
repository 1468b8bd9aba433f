"""The ledger: experiments as PRs, records as fenced YAML blocks, state as labels.

PR history plus tracker runs are the truth; everything here is a pure function of them.
"""
