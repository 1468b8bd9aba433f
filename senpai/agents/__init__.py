"""Agent runtimes: one bounded turn each, run as a fleet job.

Runtimes write to the ledger only through `senpai.ledger.transitions`.
"""
