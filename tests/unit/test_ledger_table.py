"""`senpai ledger`'s default table: readable at 80 columns, with the decision's reason and the current best marked."""

import io

from forge_fixtures import experiment, merged
from rich.console import Console

from senpai.cli.ledger import BEST, print_table
from senpai.ledger.baseline import best_merge
from senpai.ledger.blocks import Decision
from senpai.ledger.experiment import Experiment
from senpai.ledger.table import ledger_rows

BASE = "b" * 40


def exp(pr: int, state: str, decision: Decision | None) -> Experiment:
    return experiment(pr, state, decisions=[decision] if decision else [])


def best_pr(exps: list[Experiment]) -> int | None:
    best = best_merge(exps)
    return best.pr if best else None


LONG = "the holdout moved by +0.004, under the noise floor 0.026 of the baseline's five repeats; [bold]forged[/bold]"


def render(exps: list[Experiment]) -> list[str]:
    out = io.StringIO()
    print_table(ledger_rows(exps), best_pr(exps), Console(file=out, width=80))
    return out.getvalue().splitlines()


def test_the_table_fits_80_columns_with_the_reason_and_the_best_marked():
    exps = [
        merged(3, 0.95, BASE),
        merged(5, 0.97, "merge-3"),
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


def test_the_current_best_is_the_best_verified_holdout_of_the_merges_not_the_last_nor_a_hand_merge():
    # #7 merged first, #5 onto #7's merge commit (the last merge, a lower holdout); #9 merged by
    # hand: its decision names a holdout value, but no passing verification of its merged head
    d = Decision(pr=9, head="h", verdict="merge", reason="r", candidate=0.99)
    hand = experiment(9, "merged", head="c" * 40, decisions=[d])
    exps = [merged(5, 0.93, "merge-7"), merged(7, 0.95, BASE), hand]
    best = best_merge(exps)
    assert (best.pr, best.value, best.metric) == (7, 0.95, "acc")
    assert [line for line in render(exps) if BEST in line and "current best" not in line][0].split()[1:3] == [BEST, "7"]
    # minimized: the lowest holdout; a tie goes to the later merge
    low = [merged(3, 0.2, BASE, "minimize"), merged(4, 0.3, "merge-3", "minimize"), merged(6, 0.2, "merge-4", "minimize")]
    assert best_pr(low) == 6 and best_pr(low[:2]) == 3


def test_no_merge_no_best():
    assert best_pr([exp(4, "closed", Decision(pr=4, head="h", verdict="close", reason="r"))]) is None
    assert BEST not in "\n".join(render([exp(6, "wip", None)]))
