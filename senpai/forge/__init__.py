"""The forge port (GitHub REST semantics) and its one adapter, PyGithub.

The local forge (`senpai.forge.localforge`) is a server that speaks the same REST dialect, so the
same adapter serves github.com, GitHub Enterprise and the local forge. `mirror` keeps a local copy
of the forge's base branch, which the wrapper updates and its jobs clone from.
"""
