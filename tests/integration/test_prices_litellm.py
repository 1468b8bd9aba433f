"""`senpai.config.prices` reads LiteLLM's bundled price map without importing LiteLLM; it must
agree with LiteLLM's own pricing, as the SDK applies it to every call (`litellm.cost_per_token`),
for the model names senpai's docs use and the ways a name can miss."""

import pytest

from senpai.config.prices import litellm_prices

NAMES = [
    "anthropic/claude-sonnet-4-5",  # provider/name, the name a key of the map
    "claude-sonnet-4-5",
    "openai/gpt-4o",
    "openai/GPT-4o",  # keys compared without case
    "openai/gpt-5-mini",
    "azure/gpt-4o",  # provider/name, itself a key
    "vertex_ai/gemini-2.5-pro",  # the map's provider is vertex_ai-language-models
    "litellm_proxy/claude-sonnet-4-5",  # the proxy: any provider
    "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
    "openai/qwen",  # a local alias on a base_url
    "hosted_vllm/qwen",
    "ollama/llama3",  # in the map, at $0
    "openai/claude-sonnet-4-5",  # a key, but of another provider
    "openrouter/anthropic/claude-3.5-sonnet",
]


@pytest.mark.parametrize("model", NAMES)
def test_it_prices_a_model_exactly_when_litellm_does(model):
    import litellm

    try:
        priced = sum(litellm.cost_per_token(model=model, prompt_tokens=1000, completion_tokens=1000)) > 0
    except Exception:  # LiteLLM raises for a model it cannot price: the SDK then records no cost
        priced = False
    assert litellm_prices(model) is priced
