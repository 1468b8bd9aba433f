"""The `openhands` runtime: advisor and student turns as OpenHands Agent SDK conversations.

The student gets terminal and file-editor tools, the advisor a file editor alone, plus senpai's
typed tools (tools.py), which write the ledger through the same functions as the `search` runtime;
senpai's own short system prompt replaces the SDK's (conversation.py).  The harness, not the prompt,
enforces the turn limits (turn_guard.py), keeps secrets out of the agent's reach (secrets.py) and marks
untrusted text (prompts.py). The entry points set the environment LiteLLM and the SDK read at
import (`senpai.startup`).
"""
