"""The `openhands` runtime: advisor and student turns as OpenHands Agent SDK conversations.

The agent gets terminal and file-editor tools plus senpai's typed tools (tools.py), which write
the ledger through the same functions as the `search` runtime.  The harness, not the prompt,
enforces budgets (budget.py), keeps secrets out of the agent's reach (secrets.py) and marks
untrusted text (prompts.py). The entry points set the environment LiteLLM and the SDK read at
import (`senpai.startup`).
"""
