"""LLM checks of `senpai preflight`: per openhands role, the key env and one 1-token completion.
A role whose model's calls would count $0 (`LLMSettings.unpriced`) gets a warning, not a pass.

Roles that share model, endpoint and key env share one completion. The key is read from the
environment and passed to LiteLLM directly; it never appears in a result (error messages are
redacted). With a custom `base_url` and no key the completion goes out keyless, as the runtime's
does (senpai/agents/openhands/llm.py), for a vLLM or llama.cpp server that needs none. The
search runtime needs no LLM and is skipped. LiteLLM's own prints go to stderr, never into the
report on stdout.
"""

import contextlib
import sys

from senpai.config.harness import HarnessConfig, LLMSettings
from senpai.config.roles import Role
from senpai.errors import extra_missing
from senpai.preflight import CheckResult, failed, passed, skipped, warned

TIMEOUT_SECONDS = 30
# What the runtime sends for a keyless OpenAI-compatible server: LiteLLM's openai client needs some key.
NO_KEY = "EMPTY"


def ping(llm: LLMSettings, key: str) -> str:
    """One completion of at most 1 token; returns the model name the provider reports.

    LiteLLM: completion(model, api_base, api_key, max_tokens=1). Raises the provider's error.
    """
    import litellm

    litellm.suppress_debug_info = True  # its "Give Feedback / Get Help" banner on every error
    with contextlib.redirect_stdout(sys.stderr):
        response = litellm.completion(
            model=llm.model,
            api_base=llm.base_url,
            api_key=key,
            messages=[{"role": "user", "content": "Reply with OK."}],
            max_tokens=1,
            timeout=TIMEOUT_SECONDS,
            num_retries=0,
        )
    return response.model or llm.model


def llm_checks(cfg: HarnessConfig) -> list[CheckResult]:
    out: list[CheckResult] = []
    done: dict[tuple, CheckResult] = {}
    for role in (Role.ADVISOR, Role.STUDENT):
        runtime = getattr(cfg.runtime, role)
        check = f"{role} LLM"
        llm = runtime.llm if runtime.llm_agent else None
        if llm is None:
            out.append(skipped("llm", check, f"{runtime.kind} runtime: no LLM"))
            continue
        if module := extra_missing("agents"):
            fix = "pip install 'senpai[agents]'"
            out.append(failed("llm", check, f"the openhands runtime's package {module!r} is not installed", fix))
            continue
        key = llm.api_key()
        if key is None and llm.base_url is None:
            out.append(failed("llm", check, f"${llm.api_key_env} is not set", f"export {llm.api_key_env}=<provider key>"))
            continue
        ident = (llm.model, llm.base_url, llm.api_key_env)
        if ident not in done:
            done[ident] = _complete(check, llm, key)
        out.append(_priced(role, done[ident].model_copy(update={"check": check}), llm))
    return out


def _priced(role: Role, result: CheckResult, llm: LLMSettings) -> CheckResult:
    """`result`, a warning instead of a pass if `llm`'s calls count $0."""
    if result.outcome != "pass" or not llm.unpriced():
        return result
    detail = (
        f"{result.detail}; unpriced: LiteLLM has no price for {llm.model} and its per-token prices are not both set, "
        "so its calls count $0"
    )
    fix = f"set runtime.{role}.llm.input_cost_per_token and output_cost_per_token (dollars; 0 for a free server)"
    return warned("llm", result.check, detail, fix)


def _complete(check: str, llm: LLMSettings, key: str | None) -> CheckResult:
    """One ping; `key` None (only with a base_url): keyless, as the runtime would call."""
    where = llm.base_url or "the provider's default endpoint"
    import openai

    try:
        model = ping(llm, key or NO_KEY)
    except openai.OpenAIError as e:  # LiteLLM maps every provider's errors onto openai's classes
        message = str(e).replace(key, "***")[:300] if key else str(e)[:300]
        if key:
            fix = f"check llm.model ({llm.model}), llm.base_url and ${llm.api_key_env}"
        else:
            fix = f"check llm.model ({llm.model}) and llm.base_url; if the server needs a key, export {llm.api_key_env}=<key>"
        return failed("llm", check, f"{type(e).__name__}: {message}", fix)
    keyless = "" if key else f" without a key (${llm.api_key_env} unset)"
    return passed("llm", check, f"{model} at {where} answered a 1-token completion{keyless}")
