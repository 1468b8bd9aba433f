"""Slash-command parsing and checking, and redaction of anything senpai posts."""

import base64

import pytest

from senpai.config.target import Params
from senpai.ledger.blocks import Evidence, PrimaryResult, SteerCommand, parse, render
from senpai.ledger.commands import CommandError, command_lines, parse_commands
from senpai.ledger.redact import REDACTED, redact, register_secret

SPACE = Params.model_validate(
    {
        "file": "p.json",
        "space": {
            "width": {"type": "int", "low": 8, "high": 128},
            "lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": True},
            "act": {"type": "categorical", "choices": ["relu", "tanh"]},
            "batch": {"type": "categorical", "choices": [32, 64]},
            "bn": {"type": "categorical", "choices": [True, False]},
        },
    }
).space


def test_command_lines_are_lines_starting_with_the_word():
    body = "Hi!\n  /senpai pause  \n/senpaix resume\nsee /senpai stop\n/senpai"
    assert command_lines(body) == ["/senpai pause", "/senpai"]
    assert command_lines("just text") == []


def test_commands_are_checked_and_typed():
    cmds = parse_commands("/senpai caps experiments=4\n/senpai try width=32 lr=0.01 act=tanh batch=64 bn=true", SPACE, None)
    assert [c.verb for c in cmds] == ["budget", "try"] and cmds[0].experiments == 4
    (b,) = parse_commands("/senpai caps dollars=12.5 tokens=200000 cpu_hours=3 end=2026-12-31T18:00+01:00", SPACE, None)
    assert (b.experiments, b.dollars, b.tokens, b.cpu_hours, b.gpu_hours) == (None, 12.5, 200000, 3.0, None)
    assert b.end_at == "2026-12-31T17:00:00+00:00"
    assert cmds[1].params == {"width": 32, "lr": 0.01, "act": "tanh", "batch": 64, "bn": True}
    assert parse_commands("/senpai stop", SPACE, 12)[0].pr == 12
    assert parse_commands("/senpai allow Compute", None, 12) == [SteerCommand(verb="allow", pr=12)]
    assert parse_commands("/senpai PAUSE", None, None)[0].verb == "pause"


@pytest.mark.parametrize(
    "body, on_pr, why",
    [
        ("/senpai", None, "no command after /senpai"),
        ("/senpai dance", None, "unknown command `dance`"),
        ("/senpai pause now", None, "`pause` takes no arguments"),
        ("/senpai stop", None, "works in a comment on the experiment PR"),
        ("/senpai allow compute", None, "works in a comment on the experiment PR it allows"),
        ("/senpai allow", 12, "expected `/senpai allow compute`"),
        ("/senpai allow gpus", 12, "expected `/senpai allow compute`"),
        ("/senpai caps experiments=0", None, "must be a whole number > 0 and at most 1,000,000, got `0`"),
        ("/senpai caps experiments=2.5", None, "must be a whole number > 0"),
        ("/senpai caps dollars=-1", None, "`dollars` (LLM dollars) must be a number > 0"),
        ("/senpai caps gpu_hours=inf", None, "must be a number > 0"),
        ("/senpai caps end=2026-12-31", None, "`end` must be the wall-clock end, ISO 8601 with a zone"),
        ("/senpai caps gpus=3", None, "with keys experiments, dollars, tokens, gpu_hours, cpu_hours, end"),
        ("/senpai caps end_at=2026-12-31T18:00Z", None, "`end_at` is no cap key: did you mean `end`?"),
        ("/senpai caps gpuHours=3", None, "`gpuHours` is no cap key: did you mean `gpu_hours`?"),
        ("/senpai caps dolars=3", None, "`dolars` is no cap key: did you mean `dollars`?"),
        ("/senpai caps", None, "expected `/senpai caps key=value ...`"),
        ("/senpai try", None, "at least one key=value"),
        ("/senpai try depth=3", None, "unknown param `depth`"),
        ("/senpai try width=500", None, "out of range [8, 128]"),
        ("/senpai try width=1.5", None, "whole number"),
        ("/senpai try lr=nan", None, "must be finite"),
        ("/senpai try act=gelu", None, "one of relu, tanh"),
        ("/senpai try width", None, "expected key=value"),
        ("/senpai try width=8 width=9", None, "given twice"),
        ('/senpai try act="relu', None, "No closing quotation"),
        ("/senpai pause\n/senpai try width=`rm -rf`", None, "expected key=value, got `-rf'`"),
    ],
)
def test_bad_commands_say_why(body, on_pr, why):
    with pytest.raises(CommandError) as e:
        parse_commands(body, SPACE, on_pr)
    assert why in str(e.value)


def test_a_bad_command_is_quoted_back_without_its_control_or_format_characters():
    # a right-to-left override in a key would reorder the rest of the reply's line as GitHub shows it
    with pytest.raises(CommandError) as e:
        parse_commands("/senpai caps Dollars\u202e=1 x\x1b[31m=2", SPACE, None)
    assert "\u202e" not in str(e.value) and "\x1b" not in str(e.value) and "`Dollars ` is no cap key" in str(e.value)


def test_try_needs_the_space():
    with pytest.raises(CommandError, match="senpai.yaml could not be read"):
        parse_commands("/senpai try width=8", None, None)


def test_redact_env_secrets_registered_values_and_token_shapes(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "k3y-value-0123456789")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to redact safely
    monkeypatch.setenv("PLAIN", "not-a-secret-value")
    register_secret("forge-token-in-an-oddly-named-var")
    basic = base64.b64encode(b"x-access-token:forge-token-in-an-oddly-named-var").decode()
    text = (
        "key=k3y-value-0123456789 abc not-a-secret-value\n"
        "token forge-token-in-an-oddly-named-var and its header " + basic + "\n"
        "ghp_" + "a" * 36 + " github_pat_" + "B" * 40 + " sk-proj-" + "c" * 30 + " AKIA" + "D" * 16 + "\n"
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x.y\nscikit-learn sk-short"
    )
    out = redact(text)
    assert out.count(REDACTED) == 8, out
    for secret in ("k3y-value", "forge-token", basic, "ghp_", "github_pat_", "sk-proj", "AKIA", "eyJhbG"):
        assert secret not in out
    assert "abc not-a-secret-value" in out and "scikit-learn sk-short" in out


def test_blocks_are_redacted_before_yaml_folds_a_long_line(monkeypatch):
    token = "ghp_" + "Z" * 36
    monkeypatch.setenv("GITHUB_TOKEN", "tok-" + "9" * 30)
    tail = "x" * 95 + " " + token + " then the env token tok-" + "9" * 30 + " in a long log line " * 5
    ev = Evidence(
        pr=1,
        attempt=1,
        student="ada",
        head="h",
        command="c",
        outcome="failed",
        primary=PrimaryResult(name="acc", value=None, baseline=None, delta=None),
        interpretation="i",
        log_tail=tail,
    )
    text = render(ev)
    assert token not in text.replace("\n", "").replace(" ", "") and "9" * 30 not in text
    back = parse(text)
    assert back.log_tail.count(REDACTED) == 2


def test_wiring_registers_the_forge_token_and_llm_keys_whatever_their_names(monkeypatch):
    """The names are odd on purpose: values of secret-looking names (`*_KEY`, `*_PAT`) are redacted anyway."""
    from senpai.cli.wiring import hold_secrets, make_forge
    from senpai.config.harness import HarnessConfig

    monkeypatch.setenv("FORGE_ODD", "pat-value-for-the-forge-123")
    monkeypatch.setenv("PROVIDER_ODD", "provider-key-value-456789")
    cfg = HarnessConfig.model_validate(
        {
            "forge": {"repo": "o/r", "base_url": "http://127.0.0.1:9", "token_env": "FORGE_ODD"},
            "tracker": {"dir": "/tmp/w"},
            "fleet": {"dir": "/tmp/f"},
            "state_dir": "/tmp/s",
            "students": [{"name": "ada"}],
            "runtime": {"advisor": {"kind": "openhands", "llm": {"model": "m", "api_key_env": "PROVIDER_ODD"}}},
        }
    )
    both = "pat-value-for-the-forge-123 provider-key-value-456789"
    make_forge(cfg)  # lazy: no request is sent; and it registers nothing
    assert redact(both) == both
    hold_secrets(cfg)
    assert redact(both) == f"{REDACTED} {REDACTED}"


def test_fenced_code_and_quotes_are_not_commands():
    body = (
        "To pause, write:\n```\n/senpai pause\n```\n~~~~ text\n/senpai stop\n~~~\n/senpai stop\n~~~~\n"
        "> /senpai resume\n> as you said\n/senpai caps experiments=2\n\n/senpai caps experiments=3\n"
        "```\n/senpai resume"  # an unclosed fence runs to the end
    )
    assert command_lines(body) == ["/senpai caps experiments=3"]


def test_the_prefix_is_case_insensitive():
    assert command_lines("/Senpai pause\n/SENPAI resume") == ["/Senpai pause", "/SENPAI resume"]
    assert [c.verb for c in parse_commands("/Senpai pause", None, None)] == ["pause"]


def test_a_try_reports_every_bad_param():
    with pytest.raises(CommandError) as e:
        parse_commands("/senpai try width=9999 act=swish lr=0.01", SPACE, None)
    assert "out of range [8, 128]" in str(e.value) and "one of relu, tanh, got `swish`" in str(e.value)


@pytest.mark.parametrize(
    "body",
    [
        "<!--\n/senpai stop\n-->",  # an HTML block (a comment)
        "Hi <!-- hidden\n/senpai stop\n--> there",  # an inline HTML comment spanning lines
        "<!-- x -->/senpai stop",
        "<div>\n/senpai stop\n</div>",
        "text\n\n    /senpai stop",  # indented code
        "```python\n/senpai stop\n```",
        "> quoted\n/senpai stop",  # a lazy continuation line of the quote
        "> > /senpai stop",
        "- /senpai stop",  # a list item
        "1. item\n\n   /senpai stop",  # a paragraph inside a list item
        "# /senpai stop",
        "`/senpai stop`",
        "*/senpai stop*",
        "[/senpai stop](https://example.com)",
        "/senpai stop\n" + "x" * 70_000,  # over MAX_BODY: not read at all
    ],
)
def test_hidden_quoted_or_code_commands_are_not_commands(body):
    assert command_lines(body) == []


@pytest.mark.parametrize(
    "body",
    [
        # CommonMark ends an HTML block at a blank line: the command parses as a top-level paragraph,
        # which GitHub renders inside the collapsed <details>
        "<details><summary>logs</summary>\n\n/senpai approve 0123456789ab\n\n</details>",
        "<details>\n\n/senpai stop\n\n</details>",
        "/senpai pause\n\n<details>\n\nlogs\n\n</details>",  # a message that holds an HTML block holds no command
        "<div align=center>\n\n/senpai stop\n\n</div>",
        "<span>\n\n/senpai stop\n\n</span>",  # a lone tag line: an HTML block of its own kind (7)
        "see <details> below\n\n/senpai stop\n\nbar </details>",  # inline tags open an element too
        "/senpai stop <b>now</b>",
        "<!-- note --> <details>\n\n/senpai stop\n\n</details>",  # a comment does not excuse what follows it
        "<DETAILS>\n\n/senpai stop\n\n</DETAILS>",
    ],
)
def test_a_message_that_holds_raw_html_holds_no_command(body):
    assert command_lines(body) == []


def test_html_comments_alone_do_not_void_a_message():
    body = "<!-- issue template: say what you want -->\n\n/senpai pause <!-- why -->\n\n<!--\n/senpai stop\n-->"
    assert command_lines(body) == ["/senpai pause"]


def test_commands_in_top_level_paragraphs_are_found():
    body = (
        "Please:\n/senpai pause <!-- because -->\n\n<!-- /senpai stop -->\n\n> /senpai stop\n\n"
        "/senpai try act=`tanh` width=*8*\n/senpai caps experiments=3\\\n/senpai resume"
    )
    assert command_lines(body) == [
        "/senpai pause",
        "/senpai try act=`tanh` width=*8*",
        "/senpai caps experiments=3",
        "/senpai resume",
    ]


@pytest.mark.parametrize(
    "value",
    ["end=9999-12-31T23:59:59-01:00", "end=0001-01-01T00:00+01:00", "experiments=" + "9" * 400, "tokens=" + "9" * 101,
     "dollars=1e400", "experiments=1000001", "end=" + "2026-12-31T18:00Z" * 4],
)  # fmt: skip
def test_a_cap_value_out_of_bounds_is_refused_not_a_crash_nor_an_unreadable_ack(value):
    """Overflowing times and numbers once raised OverflowError out of the tick (every tick, as the
    message stayed unacknowledged); a 101-digit cap made an ack that safe_yaml could not read back."""
    with pytest.raises(CommandError, match="must be"):
        parse_commands(f"/senpai caps {value}", SPACE, None)
