"""Whether LiteLLM can price a model, told offline and without importing LiteLLM.

An openhands turn's dollars are LiteLLM's cost of each call, or, with both
`input_cost_per_token` and `output_cost_per_token` set, those prices (the OpenHands SDK applies
them only together). A model that neither prices counts $0 per call, and `caps.dollars` never
trips: the harness config warns of it at load, `senpai preflight` shows it as a warning,
`senpai status` marks the dollars "unpriced", and a config with `caps.dollars` refuses it.

The answer is read from the price map the installed LiteLLM ships
(`model_prices_and_context_window_backup.json`), the one LiteLLM itself reads when
`LITELLM_LOCAL_MODEL_COST_MAP` is set, as every senpai process sets it (`senpai.startup`). The file
is found and parsed without importing LiteLLM (its import costs seconds, and a verifier job loads
the harness config too), and never over the network: LiteLLM's own lookup asks an Ollama server
for its models. The lookup follows LiteLLM's static one for the names senpai documents
(`tests/integration/test_prices_litellm.py` checks it against LiteLLM's `cost_per_token`):

- the model name itself is a key of the map (`gpt-4o`, `azure/gpt-4o`, `ollama/llama3`), or
- `<provider>/<name>` where `<name>` is a key whose `litellm_provider` is `<provider>` or starts
  with it (`anthropic/claude-sonnet-4-5`, `vertex_ai/gemini-2.5-pro`), or any provider for
  `litellm_proxy/<name>`;

keys compared without case. A model is priced when that entry gives a non-zero price per input
or output token: the map's `ollama/*` entries say 0, which counts as $0 all the same. An
`openai/<alias>` served from a `base_url` (llama.cpp, vLLM) is unpriced unless the alias is a
model the map knows.
"""

import importlib.util
import json
from functools import cache
from pathlib import Path

MAP_FILE = "model_prices_and_context_window_backup.json"
ANY_PROVIDER = "litellm_proxy"  # LiteLLM's proxy: the entry of the model behind it, whatever its provider


@cache
def _price_map() -> dict[str, dict] | None:
    """LiteLLM's bundled price map by lower-cased model key; None if LiteLLM is not installed, or
    ships no such file."""
    spec = importlib.util.find_spec("litellm")  # finds the package folder without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MAP_FILE
    if not path.is_file():
        return None
    raw = json.loads(path.read_text())
    return {k.lower(): v for k, v in raw.items() if isinstance(v, dict)}


@cache
def litellm_prices(model: str) -> bool | None:
    """True if LiteLLM's bundled price map gives the LiteLLM model name `model` a non-zero price
    per input or output token, False if it gives none or 0, None if LiteLLM or its map is not
    installed here (then it cannot be told: that machine runs no openhands turn). Reads the map once
    per process."""
    prices = _price_map()
    if prices is None:
        return None
    entry = prices.get(model.lower())
    if entry is None and "/" in model:
        provider, name = model.lower().split("/", 1)
        found = prices.get(name)
        if found is not None and (provider == ANY_PROVIDER or str(found.get("litellm_provider", "")).startswith(provider)):
            entry = found
    return entry is not None and bool(entry.get("input_cost_per_token") or entry.get("output_cost_per_token"))
