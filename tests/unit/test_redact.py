"""Secrets are found by name and masked in text, including git's Basic-auth form of a token."""

import base64

from senpai.ledger.blocks import BudgetReport, TurnUsage, parse, render
from senpai.ledger.redact import REDACTED, redact, register_secret, secret_names


def test_secret_names_by_pattern_and_explicit():
    env = {
        "GITHUB_TOKEN": "ghp_abcdef123",
        "MY_FORGE": "x-forge-secret",
        "WANDB_API_KEY": "k" * 40,
        "HOME": "/root",
        "GIT_CONFIG_VALUE_0": "Authorization: Basic abc",
        "TOKENIZERS_PARALLELISM": "false",
        "EMPTY_TOKEN": "",
    }
    assert secret_names(env, ["MY_FORGE"]) == ["GITHUB_TOKEN", "GIT_CONFIG_VALUE_0", "MY_FORGE", "WANDB_API_KEY"]


def test_registered_secret_masked_in_plain_and_basic_auth_forms():
    token = "plainvalue-0123456789"  # no token shape: only the registration can catch it
    register_secret(token)
    register_secret("abc")  # too short to mask safely: left alone
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    text = f"push failed: header {basic} with {token}; abc"
    assert redact(text) == f"push failed: header {REDACTED} with {REDACTED}; abc"
    assert redact("") == ""


def test_budget_report_block_round_trips():
    u = TurnUsage(llm_calls=2, tokens=100, dollars=0.01, wall_seconds=3.5)
    b = BudgetReport(
        role="student",
        pr=3,
        revision="a" * 40,
        exhausted=["llm_calls"],
        spent=u,
        limits=u,
        known="k",
        missing="m",
        tried=["terminal({})"],
        needed=u.model_copy(update={"llm_calls": 4}),
    )
    assert parse(render(b)) == b


def test_commit_messages_are_redacted_before_they_reach_git(tmp_path):
    from senpai.job.workcopy import WorkCopy

    secret = "commit-secret-0123456789"
    register_secret(secret)
    repo = WorkCopy(tmp_path, {})
    repo.git("init", "--quiet")
    (tmp_path / "f.txt").write_text("x\n")
    repo.commit_all(f"attempt 1 (token was {secret})")
    assert repo.git("log", "-1", "--format=%s") == f"attempt 1 (token was {REDACTED})"


def test_secret_names_catch_keys_that_fit_no_suffix():
    env = {n: "value-0123456789abc" for n in ("AWS_SECRET_ACCESS_KEY", "API_KEY", "PGPASSWORD", "KAGGLE_KEY", "HF_TOKEN")}
    env |= {"TOKENIZERS_PARALLELISM": "false-but-long", "PATH": "/usr/bin:/bin", "KEYBOARD": "us-international"}
    assert secret_names(env) == ["API_KEY", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "KAGGLE_KEY", "PGPASSWORD"]


def test_the_password_of_a_url_in_the_environment_is_masked(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://ada:db-pass-0123456789@db.internal:5432/runs")
    out = redact("connecting to postgres://ada:db-pass-0123456789@db.internal:5432/runs failed")
    assert "db-pass" not in out and out == f"connecting to postgres://ada:{REDACTED}@db.internal:5432/runs failed"


def test_percent_encoded_hex_and_prefix_forms_are_masked():
    token = "tok/en+with=odd&chars-0123456789"
    register_secret(token)
    quoted = "tok%2Fen%2Bwith%3Dodd%26chars-0123456789"
    hexed = token.encode().hex()
    text = f"url ?key={quoted}; hex {hexed} HEX {hexed.upper()}; cut short: {token[:9]}… and {token[:20]}|end"
    out = redact(text)
    assert out == f"url ?key={REDACTED}; hex {REDACTED} HEX {REDACTED}; cut short: {REDACTED}… and {REDACTED}|end", out
    assert redact(f"seven: {token[:7]}") == f"seven: {token[:7]}"  # below MIN_PREFIX: an ordinary word


def test_public_parts_of_a_secrets_forms_are_not_masked_as_a_truncated_copy(monkeypatch):
    register_secret("first-token-0123456789")
    other = base64.b64encode(b"x-access-token:other-0123456789abcdef").decode()  # shares 20 chars with the first's
    assert redact(f"header {other}") == f"header {other}"
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/home/ada/.aws/credentials")  # a path: whole only
    assert redact("at /home/ada/project/train.py") == "at /home/ada/project/train.py"
    assert redact("read /home/ada/.aws/credentials") == f"read {REDACTED}"


def test_short_secrets_are_masked_whole_only():
    secret = "short-secret-1"  # 14 characters: a prefix could be an ordinary word
    register_secret(secret)
    assert redact(f"{secret} and short-se") == f"{REDACTED} and short-se"
