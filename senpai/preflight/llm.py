"""LLM checks of `senpai preflight`: per openhands role, the key env and one 1-token completion.

Roles that share model, endpoint and key env share one completion. The key is read from the
environment and passed to LiteLLM directly; it never appears in a result (error messages are
redacted). The search runtime needs no LLM and is skipped.
"""

from senpai.config.harness import HarnessConfig, LLMSettings
from senpai.preflight import CheckResult, failed, passed, skipped

TIMEOUT_SECONDS = 30


def ping(llm: LLMSettings, key: str) -> str:
    """One completion of at most 1 token; returns the model name the provider reports.

    LiteLLM: completion(model, api_base, api_key, max_tokens=1). Raises the provider's error.
    """
    import litellm

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
    for role in ("advisor", "student"):
        runtime = getattr(cfg.runtime, role)
        check = f"{role} LLM"
        if runtime.kind != "openhands" or runtime.llm is None:
            out.append(skipped("llm", check, f"{runtime.kind} runtime: no LLM"))
            continue
        llm = runtime.llm
        key = llm.api_key()
        if key is None:
            out.append(failed("llm", check, f"${llm.api_key_env} is not set", f"export {llm.api_key_env}=<provider key>"))
            continue
        ident = (llm.model, llm.base_url, llm.api_key_env)
        if ident not in done:
            done[ident] = _complete(check, llm, key)
        out.append(done[ident].model_copy(update={"check": check}))
    return out


def _complete(check: str, llm: LLMSettings, key: str) -> CheckResult:
    where = llm.base_url or "the provider's default endpoint"
    import openai

    try:
        model = ping(llm, key)
    except openai.OpenAIError as e:  # LiteLLM maps every provider's errors onto openai's classes
        message = str(e).replace(key, "***")[:300]
        fix = f"check llm.model ({llm.model}), llm.base_url and ${llm.api_key_env}"
        return failed("llm", check, f"{type(e).__name__}: {message}", fix)
    return passed("llm", check, f"{model} at {where} answered a 1-token completion")
