"""The `search` runtime: no LLM. Optuna proposes, the student applies params, numbers decide."""
