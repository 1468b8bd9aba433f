"""The local forge: a GitHub-REST-compatible server (FastAPI + SQLite + bare git) for one machine.

senpai talks to it through the same PyGithub adapter it uses for github.com (`senpai.forge.github`).
See docs/forge.md for the endpoints, the auth rules and where the data lives.
"""

from senpai.forge.localforge.app import create_app
from senpai.forge.localforge.server import LocalForgeServer, serve, start_in_thread

__all__ = ["LocalForgeServer", "create_app", "serve", "start_in_thread"]
