"""`senpai ledger`'s default table: readable at 80 columns, with the decision's reason and the current best marked."""

import io

from forge_fixtures import experiment
from rich.console import Console

from senpai.cli.ledger import BEST, print_table
from senpai.ledger.blocks import Decision
from senpai.ledger.experiment import Experiment
from senpai.ledger.table import current_best, ledger_rows


def exp(pr: int, state: str, decision: Decision | None) -> Experiment:
    return experiment(pr, state, decisions=[decision] if decision else [])


def merged(pr: int, holdout: float) -> Experiment:
    d = Decision(pr=pr, head="h", verdict="merge", reason="beats the floor", candidate=holdout, baseline=0.8, improvement=0.1)
    return exp(pr, "merged", d)


LONG = "the holdout moved by +0.004, under the noise floor 0.026 of the baseline's five repeats; [bold]forged[/bold]"


def render(exps: list[Experiment]) -> list[str]:
    out = io.StringIO()
    print_table(ledger_rows(exps), current_best(exps), Console(file=out, width=80))
    return out.getvalue().splitlines()


def test_the_table_fits_80_columns_with_the_reason_and_the_best_marked():
    exps = [
        merged(3, 0.95),
        merged(5, 0.97),
        exp(4, "closed", Decision(pr=4, head="h", verdict="close", reason=LONG)),
        exp(6, "wip", None),
    ]
    lines = render(exps)
    assert max(len(line) for line in lines) <= 80
    borders = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert len(borders) > 6 and all(line.rstrip()[-1] in "┓┃┩│┘" for line in borders)  # whole: rich crops a wider table
    text = "\n".join(lines)
    assert "reason" in text and "under the noise" in text and "[bold]forged[/bold]" in " ".join(text.split())  # no markup
    assert [line for line in lines if BEST in line and "current best" not in line][0].split()[1:3] == [BEST, "5"]


def test_no_merge_no_best():
    assert current_best([exp(4, "closed", Decision(pr=4, head="h", verdict="close", reason="r"))]) is None
    assert BEST not in "\n".join(render([exp(6, "wip", None)]))
