"""A hostile target against the real loop, run as a non-root user (issue 24): its train command (the
student's and the verifier's train steps) and its evaluator (the score step) run the probe of
tests/hostile_target.py, which tries every credential, every process and file of senpai's, senpai's
state and the forge. They find no token, write nothing of senpai's, read none of senpai's folders,
and the forge lets them do nothing; the experiments are decided as any other.

On a machine where the tests run as root (CI), the wrapper, its fleet and every job run in a user
namespace as uid 1000 with no capability (`as_non_root`): the processes of the same non-root user
that candidate code shares a machine with, the case the walls are for.
"""

import os
import subprocess
import sys

import pytest
from forge_fixtures import register_bot
from hostile_target import BOT, HOSTILE_TRAIN, as_non_root, assert_got_nothing, hostile_files, probes, senpai_folders, step_kind
from research import TARGETS, make_program, reader

from senpai.ledger.consistency import check

pytestmark = pytest.mark.e2e


@pytest.mark.long
def test_a_hostile_target_gets_nothing(local_forge, tmp_path):
    register_bot(local_forge.server, BOT)
    quick = TARGETS["quick"]  # the hostile part is the probe; the training it wraps is the quick target's
    files = hostile_files((quick / "train.py").read_text(), (quick / "eval" / "evaluate.py").read_text())
    config = make_program(
        local_forge.base_url,
        tmp_path,
        "hostile",
        experiments=2,
        mutate=lambda t: t.update(train=HOSTILE_TRAIN),
        files=files,
        target="quick",
    )
    # the measured start (its student train), then a proposal the verifier trains and scores
    wrapper = [sys.executable, "-m", "senpai", "wrapper", "run", "--config", str(config), "--until-decided", "2", "--quiet"]
    env = {**os.environ, "SENPAI_DEMO_TOKEN": BOT}  # given to the wrapper as a person gives it: in its environment
    proc = subprocess.run(as_non_root(wrapper), env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]

    found = probes(tmp_path / "run")
    kinds = {step_kind(p) for p in found}
    assert kinds == {"student train", "verifier train", "score"}, kinds  # every step that runs the target's code
    assert_got_nothing(found, senpai_folders(config, local_forge.data_dir), [BOT])

    exps = reader(config).experiments()
    assert len([e for e in exps if e.decided]) >= 2 and exps[0].hypothesis.measures_base
    forge = reader(config).forge
    assert check(exps, forge.branch_sha("advisor")).ok  # no merge, decision or base push senpai did not make
    assert not [c for e in exps for c in forge.list_comments(e.pr) if "pwned" in c.body]
