"""Build the OpenHands LLM for a role from senpai's runtime settings (any LiteLLM model)."""

from openhands.sdk import LLM
from pydantic import SecretStr

from senpai.config.harness import OpenHandsRuntimeSettings
from senpai.config.roles import Role
from senpai.config.time_limits import LLM_BACKOFF_SECONDS, LLM_MAX_WAIT_SECONDS, LLMCall
from senpai.errors import ConfigError


def make_llm(runtime: OpenHandsRuntimeSettings, role: Role, api_key: str | None) -> LLM:
    """An LLM for `role`'s turn under `runtime`; `api_key` is read by the caller from
    `runtime.llm.api_key_env` before the environment is scrubbed.

    Each call attempt is cut at `LLMCall.timeout` seconds and tried `LLMCall.attempts` times in all
    (the SDK's `num_retries` counts the attempts, the first included), waiting LLM_BACKOFF_SECONDS,
    doubled each time, at most LLM_MAX_WAIT_SECONDS, between them. `max_output_tokens` goes out as
    the request's `max_completion_tokens`, and `extra_body` into its JSON body.

    Raises ConfigError if a provider other than a custom `base_url` gets no key."""
    settings = runtime.llm
    if api_key is None and settings.base_url is None:
        raise ConfigError(f"runtime.{role}.llm: no API key: set the env var {settings.api_key_env}")
    call = LLMCall.of(settings.timeout, settings.num_retries, runtime.turn.wall_seconds)
    return LLM(
        model=settings.model,
        base_url=settings.base_url,
        # a keyless OpenAI-compatible server (vLLM, llama.cpp) still needs some key for LiteLLM
        api_key=SecretStr(api_key or "EMPTY"),
        reasoning_effort=settings.reasoning_effort,
        input_cost_per_token=settings.input_cost_per_token,
        output_cost_per_token=settings.output_cost_per_token,
        max_output_tokens=settings.max_output_tokens,
        litellm_extra_body=dict(settings.extra_body),
        usage_id=f"senpai-{role}",
        timeout=call.timeout,
        num_retries=call.attempts,
        retry_multiplier=LLM_BACKOFF_SECONDS,
        retry_min_wait=LLM_BACKOFF_SECONDS,
        retry_max_wait=LLM_MAX_WAIT_SECONDS,
    )
