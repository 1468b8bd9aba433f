"""Build the OpenHands LLM for a role from senpai's LLMSettings (any LiteLLM model)."""

from openhands.sdk import LLM
from pydantic import SecretStr

from senpai.config.harness import LLMSettings
from senpai.config.roles import Role
from senpai.errors import ConfigError


def make_llm(settings: LLMSettings, role: Role, api_key: str | None) -> LLM:
    """An LLM for `role`; `api_key` is read by the caller from `settings.api_key_env` before the
    environment is scrubbed.  Raises ConfigError if a provider other than a custom `base_url`
    gets no key."""
    if api_key is None and settings.base_url is None:
        raise ConfigError(f"runtime.{role}.llm: no API key: set the env var {settings.api_key_env}")
    return LLM(
        model=settings.model,
        base_url=settings.base_url,
        # a keyless OpenAI-compatible server (vLLM, llama.cpp) still needs some key for LiteLLM
        api_key=SecretStr(api_key or "EMPTY"),
        reasoning_effort=settings.reasoning_effort,
        input_cost_per_token=settings.input_cost_per_token,
        output_cost_per_token=settings.output_cost_per_token,
        usage_id=f"senpai-{role}",
        num_retries=3,
        retry_min_wait=2,
        retry_max_wait=30,
    )
