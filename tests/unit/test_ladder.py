"""The Ladder: what senpai renders of the sealed holdout is rounded to the gate's resolution, and
no agent's view of the ledger holds a per-seed holdout value; the record keeps them exact."""

import math

import pytest
import yaml
from forge_fixtures import commit_and_push, hypothesis, target_yaml

from senpai.agents.openhands.prompts import digest
from senpai.config.target import TargetConfig
from senpai.ledger import transitions
from senpai.ledger.baseline import Baseline
from senpai.ledger.blocks import Decision, Verification, render
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState
from senpai.ledger.ladder import coarse, for_proposer, resolution, step
from senpai.ledger.records import read_record
from senpai.ledger.table import LedgerReader

EXACT = dict(candidate_values=[0.9694, 0.9712, 0.9681], baseline_values=[0.9667, 0.9651, 0.9699])


def _verification(**update) -> Verification:
    v = Verification(
        pr=3, candidate="b" * 40, baseline="a" * 40, metric="holdout_accuracy", direction="maximize", seeds=[0, 1, 2],
        candidate_mean=0.969567, baseline_mean=0.967233, improvement=0.002333, noise_floor=0.0147, **EXACT,
        candidate_guards={"holdout_loss": [0.11, 0.12, 0.1]}, baseline_guards={"holdout_loss": [0.1, 0.1, 0.1]},
        guards={"holdout_loss": [0.11, 0.1]}, resolution=0.0147, passed=False,
        reason="holdout_accuracy 0.9696 vs 0.9672: +0.002333 <= noise floor 0.0147 (2 x stdev 0.00735, at least 0.005)",
    )  # fmt: skip
    return v.model_copy(update=update)


@pytest.mark.parametrize(
    ("res", "expected"),
    [(0.0147, 0.01), (0.03, 0.02), (0.08, 0.05), (0.005, 0.005), (50.0, 50.0), (147.0, 100.0), (1.0, 1.0)],
)
def test_the_step_is_the_largest_readable_one_no_finer_than_the_gate(res, expected):
    assert step(res) == pytest.approx(expected)
    assert step(res) <= res * (1 + 1e-9)


@pytest.mark.parametrize("res", [None, 0.0, -1.0, math.nan, math.inf])
def test_no_resolution_rounds_nothing(res):
    assert step(res) is None and coarse(0.96941, step(res)) == 0.96941


def test_values_round_to_the_step_and_the_missing_stay_missing():
    assert coarse(0.9694, 0.01) == 0.97 and coarse(3134.2, 50.0) == 3150.0 and coarse(-0.0028, 0.01) == 0.0
    assert coarse(None, 0.01) is None and math.isnan(coarse(math.nan, 0.01))


def test_the_resolution_is_the_floor_or_the_standard_error_of_the_difference():
    assert resolution("noise_floor", 0.0147, 0.0, [], []) == 0.0147
    assert resolution("noise_floor", None, 0.0, [1, 2], [1, 2]) is None
    c, b = [0.97, 0.96, 0.98], [0.95, 0.96, 0.94]
    se = math.sqrt(0.0001 / 3 + 0.0001 / 3)
    assert resolution("welch", None, 0.0, c, b) == pytest.approx(se)
    assert resolution("paired", None, 0.05, c, b) == 0.05  # min_delta above the standard error
    assert resolution("welch", None, 0.0, [0.9], b) is None and resolution("welch", None, 0.0, [0.9, math.nan], b) is None


def test_a_proposers_verification_has_rounded_means_and_no_per_seed_value_statistic_or_p_value():
    v = _verification(rule="welch", statistic=2.5, p_value=0.031)
    shown = for_proposer(v)
    assert (shown.candidate_mean, shown.baseline_mean, shown.improvement) == (0.97, 0.97, 0.0)
    assert shown.candidate_values == shown.baseline_values == [] and shown.statistic is None and shown.p_value is None
    assert shown.guards == shown.candidate_guards == shown.baseline_guards == {}
    text = render(shown)
    for exact in [*EXACT["candidate_values"], *EXACT["baseline_values"], 0.969567, 0.002333, 0.031, 2.5]:
        assert str(exact) not in text
    assert "rounded to 0.01" in shown.reason and shown.passed is False and shown.candidate == v.candidate
    # one the verifier gave no resolution (a refusal that measured nothing, an older record) as it is
    assert for_proposer(_verification(resolution=None)) == _verification(resolution=None)


def test_a_decision_from_verified_numbers_is_rounded_and_its_reason_rewritten():
    d = Decision(
        pr=3, head="b" * 40, verdict="close", metric="holdout_accuracy", candidate=0.969567, baseline=0.967233,
        improvement=0.002333, noise_floor=0.0147, resolution=0.0147, reason=f"verifier: {_verification().reason}",
    )  # fmt: skip
    shown = for_proposer(d)
    assert (shown.candidate, shown.improvement) == (0.97, 0.0) and shown.reason.startswith("verifier: holdout")
    assert "0.9696" not in shown.reason and "0.002333" not in shown.reason
    on_validation = Decision(pr=3, head="b" * 40, verdict="close", reason="no improvement on validation: 0.9412 vs 0.9611")
    assert for_proposer(on_validation) == on_validation  # validation numbers are the proposer's own


def test_the_advisors_digest_shows_a_verified_decision_rounded():
    d = Decision(
        pr=3, head="b" * 40, verdict="close", metric="holdout_accuracy", candidate=0.969567, baseline=0.967233,
        improvement=0.002333, resolution=0.0147, reason="verifier: holdout_accuracy 0.9696 vs 0.9672: +0.002333",
    )  # fmt: skip
    h = hypothesis("a" * 40, "wide", {"width": 128})
    exp = Experiment(
        pr=3, title="wide", url="u", branch="senpai/ada/wide", head="b" * 40, student="ada", state=ExperimentState.CLOSED,
        updated_at="2026-12-06T00:00:00Z", hypothesis=h, evidence=[], verifications=[], decisions=[d],
    )  # fmt: skip
    target = TargetConfig.model_validate(yaml.safe_load(target_yaml({"min_floor": 0.005})))
    text = digest([exp], Baseline(commit="a" * 40, pr=None, run_id=None, value=0.96, params=None), target)
    assert "0.9696" not in text and "0.002333" not in text and "rounded to 0.01" in text


def test_the_pr_comment_shows_rounded_numbers_and_its_record_keeps_every_seed(fake_forge, tmp_path):
    forge, _ = fake_forge
    seed = tmp_path / "seed"
    base = commit_and_push(forge, seed, "advisor", {"senpai.yaml": target_yaml(), "params.json": '{"width": 32}\n'})
    head = commit_and_push(forge, seed, "senpai/ada/wide", {"params.json": '{"width": 128}\n'}, start="advisor")
    h = hypothesis(base, "wide", {"width": 128})
    pull = transitions.open_experiment(forge, h, "senpai/ada/wide", "advisor", "wide")
    forge.set_labels(pull.number, [*pull.labels, "status:verifying"])
    forge.set_labels(pull.number, [x for x in forge.get_pull(pull.number).labels if x != "status:wip"])
    v = _verification(pr=pull.number, candidate=head, baseline=base)
    transitions.record_verification(forge, forge.get_pull(pull.number), v)
    body = forge.list_comments(pull.number)[-1].body
    prose = body.split("<details>")[0]
    assert "0.97" in prose and "0.9696" not in prose and "0.002333" not in prose and "record below" in prose
    assert read_record(body) == v  # the per-seed values and the rule's words, exact, for humans and the gate
    assert LedgerReader(forge).experiment(forge.get_pull(pull.number)).verifications == [v]
