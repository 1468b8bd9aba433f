"""`senpai ledger`'s default table: readable at 80 columns, with the decision's reason, the current best marked, each
holdout delta's base named (a stale one greyed) and what each experiment changed."""

import io
import re
from pathlib import Path

from forge_fixtures import after_a_merge, experiment, hypothesis, merged
from rich.console import Console
from rich.text import Text

from senpai.cli.ledger import BEST, print_table
from senpai.ledger.baseline import best_merge
from senpai.ledger.blocks import Decision, Evidence
from senpai.ledger.experiment import Experiment
from senpai.ledger.table import LedgerReader, ledger_rows, to_csv

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


def column(lines: list[str], i: int) -> list[str]:
    """The words of column `i` of a rendered table, header first, row after row."""
    return [w for line in lines if line[:1] in "┃│" for w in line.strip("┃│").replace("┃", "│").split("│")[i].split()]


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
    reason = " ".join(column(lines, -1))
    assert reason.startswith("reason ") and "under the noise floor" in reason and "[bold]forged" in reason  # no markup
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


def test_after_a_merge_the_table_names_each_deltas_base_greys_the_stale_one_and_shows_the_change(fake_forge, tmp_path):
    forge, _ = fake_forge
    m = after_a_merge(forge, tmp_path)
    exps = LedgerReader(forge).experiments()
    rows = {r["pr"]: r for r in ledger_rows(exps, None, m.base)}
    start = m.start[:8]
    assert (rows[m.stale]["verifier_vs"], rows[m.stale]["verifier_stale"]) == (f"vs old base {start}", True)
    assert (rows[m.stale]["verifier_base"], rows[m.current]["verifier_base"]) == (m.start, m.base)
    assert (rows[m.current]["verifier_vs"], rows[m.merged]["verifier_vs"]) == (f"vs #{m.merged}", f"vs {start}")
    assert not rows[m.current]["verifier_stale"] and not rows[m.merged]["verifier_stale"]
    assert (rows[m.current]["change"], rows[m.stale]["change"]) == ("width 32 -> 80", "width=64")
    assert "verifier_vs,verifier_stale" in to_csv(exps, None, m.base).splitlines()[0]
    out = io.StringIO()
    print_table(ledger_rows(exps, None, m.base), m.merged, Console(file=out, width=80, force_terminal=True))
    plain = Text.from_ansi(out.getvalue()).plain.splitlines()
    assert max(len(line) for line in plain) <= 80
    deltas = " ".join(column(plain, 4))
    assert f"+0.0800 vs old base {start}" in deltas and f"+0.0200 vs #{m.merged}" in deltas
    greyed = " ".join(w for part in re.findall(r"\x1b\[2m(.*?)\x1b\[0m", out.getvalue()) for w in part.split())
    assert greyed == f"+0.0800 vs old base {start}"  # rich's dim: the stale delta, and only it
    assert " ".join(column(plain, 5)).count("width") == 3  # what each changed


def test_a_long_params_change_is_cut_and_says_how_many_more():
    h = hypothesis(BASE, "h-9", {"a": 1, "b": 2.5, "c": "relu", "d": True, "e": 1e-05})
    (row,) = ledger_rows([experiment(9, "wip", hypothesis=h)])
    assert row["change"] == "a=1, b=2.5, c=relu, +2 more"


def test_a_code_change_shows_the_files_its_verification_measured_else_its_prose():
    h = hypothesis(BASE, "h-8").model_copy(update={"params": {}, "change": "use the lbfgs\nsolver"})
    v = merged(8, 0.9, BASE).verifications[0].model_copy(update={"files": ["train.py", "model/\nnet.py", "a.py", "b.py"]})
    waiting, verified = experiment(8, "review", hypothesis=h), experiment(8, "verifying", hypothesis=h, verifications=[v])
    assert [r["change"] for r in ledger_rows([waiting, verified])] == [
        "code: use the lbfgs solver",
        "files: train.py, model/ net.py, a.py, +1 more",  # a path is flattened to one line
    ]


def test_the_readme_shows_the_table_this_code_renders():
    """README's example: #2 merged (its gain over the start), #4 verified before that merge (stale,
    the larger delta), #5 verified against #2's merge commit; the start measured on validation."""
    start, onto = "9f3c21ab" + "0" * 32, "4d7e90c1" + "0" * 32
    params = {"hidden_layers": 1, "hidden_width": 8, "activation": "logistic", "alpha": 0.0001}
    params |= {"learning_rate_init": 0.001, "batch_size": 64, "max_iter": 20}
    won = params | {"hidden_width": 64, "alpha": 0.03}

    def exp(pr: int, state: str, base: str, p: dict, val: float, delta: float | None = None, **fields) -> Experiment:
        h = hypothesis(base, f"h-{pr}", p).model_copy(update={"measures_base": pr == 1})
        v = merged(pr, 0.9, base).verifications[0].model_copy(update={"candidate": f"head-{pr}", "improvement": delta})
        e = experiment(pr, state, head=f"head-{pr}", hypothesis=h, verifications=[v] if delta else [], **fields)
        ev = Evidence.of(
            h, metric="acc", value=val, failure=None, interpretation="x", pr=pr, attempt=1, student=e.student,
            head=e.head, command="python train.py",
        )  # fmt: skip
        return e.model_copy(update={"evidence": [ev]})

    reason = "holdout 0.892 vs 0.749, +0.143 > floor 0.085"
    exps = [
        exp(1, "closed", start, params, 0.749, decisions=[Decision(pr=1, head="h", verdict="close", reason=_MEASURED)]),
        exp(2, "merged", start, won, 0.903, 0.143, merge_commit=onto, decisions=[_merge(2, start, reason)]),
        exp(4, "verifying", start, params | WIDE, 0.912, 0.216, student="bo"),
        exp(5, "verifying", onto, won | {"learning_rate_init": 0.01}, 0.921, 0.032),
    ]
    out = io.StringIO()
    print_table(ledger_rows(exps, None, onto), 2, Console(file=out, width=100))
    table = [line.rstrip() for line in out.getvalue().splitlines() if line[:1] in "┏┃┡│└"]
    readme = (Path(__file__).parents[2] / "README.md").read_text().splitlines()
    first = readme.index("    " + table[0])
    assert [line[4:] for line in readme[first : first + len(table)]] == table


WIDE = {"hidden_width": 128, "activation": "relu", "batch_size": 32, "max_iter": 30}
_MEASURED = "the base measured on validation: 0.749"


def _merge(pr: int, base: str, reason: str) -> Decision:
    return Decision(pr=pr, head=f"head-{pr}", verdict="merge", reason=reason, base=base, merged_onto=base)
