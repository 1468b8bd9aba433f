"""The demo's leaderboard ranks merged experiments first, then by validation value in the metric's direction."""

import pytest

from senpai.cli.demo import show_leaderboard


def row(pr: int, value: float | None, verdict: str | None, delta: float | None = None) -> dict:
    return {
        "pr": pr,
        "params": "{}",
        "value": value,
        "verifier_delta": delta,
        "verdict": verdict,
        "state": "closed",
        "run_id": None,
    }


@pytest.mark.parametrize(
    ("direction", "expected"), [("maximize", ["#5", "#1", "#2", "#3", "#4"]), ("minimize", ["#1", "#5", "#2", "#3", "#4"])]
)
def test_order(capsys: pytest.CaptureFixture[str], direction: str, expected: list[str]) -> None:
    rows = [
        row(1, 0.90, "merge", delta=0.147),  # a large delta against an older base
        row(2, 0.50, "close"),
        row(3, 0.0, "close"),  # zero is a value, not a missing one
        row(4, None, "close"),
        row(5, 0.97, "merge", delta=0.026),
    ]
    if direction == "minimize":
        rows[2]["value"] = 0.8
    show_leaderboard(rows, direction)
    out = capsys.readouterr().out
    assert sorted(expected, key=out.index) == expected


def test_the_leaderboard_fits_80_columns_with_its_params_whole(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    params = '{"activation": "logistic", "alpha": 0.0303, "batch_size": 128, "learning_rate_init": 0.0002381, "max_iter": 16}'
    show_leaderboard([row(1, 0.90, "merge", delta=0.147) | {"params": params}], "maximize")
    lines = capsys.readouterr().out.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert all(len(line) <= 80 and line.rstrip()[-1] in "┓┃┩│┘" for line in table)
    assert "learning_rate_init=0.0002381" in "\n".join(lines)


def test_a_delta_names_its_base_and_a_stale_one_is_dimmed(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("FORCE_COLOR", "1")
    rows = [
        row(1, 0.90, "merge", delta=0.147) | {"verifier_vs": "vs start", "verifier_stale": False},
        row(2, 0.95, None, delta=0.216) | {"verifier_vs": "vs old base #0", "verifier_stale": True},
    ]
    show_leaderboard(rows, "maximize")
    out = capsys.readouterr().out
    assert "+0.1470 vs start" in out and "+0.2160 vs old base #0" in out
    assert "\x1b[2m+0.2160" in out and "\x1b[2m+0.1470" not in out  # only the stale delta is dimmed
