"""The `openhands` runtime: advisor and student turns as OpenHands Agent SDK conversations.

The agent gets terminal and file-editor tools plus senpai's typed tools (tools.py), which write
the ledger through the same functions as the `search` runtime.  The harness, not the prompt,
enforces budgets (budget.py), keeps secrets out of the agent's reach (secrets.py) and marks
untrusted text (prompts.py).
"""

import os

# litellm fetches its price map from the network at import unless told to use its bundled copy
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
