"""`senpai validate`'s run of the evaluator: on a sample, never on the sealed holdout, and without
training anything; first, whether the score interpreter can import what it imports (`imports`).

`holdout.sample`, a command of the target's evaluator, writes a tiny artifact and a holdout that
artifact can be scored on. Then the score step's own code runs `holdout.command` on them exactly
as the verifier would (`evaluate.score_step`: the artifact checked by `artifacts.refusal` and
read-only, the evaluator's files alone in a fresh directory, `python -I -P`, no secret). What the
evaluator prints is held against senpai.yaml: the holdout metric and every guard must be printed,
as finite numbers. So an evaluator that prints another metric than the one the verifier judges (a
`holdout_score` where senpai.yaml says `holdout_log_loss`) is caught before any verification. The
train command is not run: it may take hours, and the sample needs none of the target's training.
"""

import math
import tarfile
from pathlib import Path

from senpai.config.target import TargetConfig
from senpai.job.measure import Outcome
from senpai.job.walls import Walls
from senpai.verifier.artifacts import digest, refusal
from senpai.verifier.evaluate import EvaluatorFiles, Trained, run_evaluator, score_step
from senpai.verifier.imports import import_problems

MAX_NAMED = 10  # printed keys a problem lists


def sample_problems(repo: Path, target: TargetConfig, root: Path, walls: Walls) -> tuple[list[str], Outcome | None]:
    """For checkout `repo` (the working tree's `holdout.files`), in the empty folder `root`: first
    the import check (`imports.import_problems`), then, if it finds nothing, `target.holdout.sample`
    and `holdout.command` on what it wrote, each within `budget.wall_seconds`, all under the score
    interpreter (`holdout.python`, else senpai's) and behind `walls`, as the verifier's steps run.
    Returns (problems, one sentence each; the score step's outcome, None if it did not run).
    Raises ConfigError as `EvaluatorFiles.from_tree`, and if `holdout.python` does not run."""
    evaluator = EvaluatorFiles.from_tree(repo, target.holdout.files)
    try:
        problems = import_problems(repo, target, evaluator, root / "imports", walls)
        return (problems, None) if problems or target.holdout.sample is None else _sample(evaluator, target, root, walls)
    except tarfile.TarError as e:  # a link in holdout.files that leads out of the evaluator's directory
        return [f"holdout.files cannot be laid out as the score step lays them out: {e}"], None


def _sample(evaluator: EvaluatorFiles, target: TargetConfig, root: Path, walls: Walls) -> tuple[list[str], Outcome | None]:
    hold, seed, timeout = target.holdout, target.holdout.seeds[0], float(target.budget.wall_seconds)
    artifact, holdout = root / "artifact", root / "holdout"
    artifact.mkdir(parents=True)
    holdout.mkdir()
    wrote = run_evaluator(
        hold.sample, evaluator, artifact, holdout, seed, root / "sample", timeout, root / "sample.log", walls,
        writes=True, python=hold.python,
    )  # fmt: skip
    if wrote.returncode != 0:
        return [f"holdout.sample {_ended(wrote)}: {wrote.tail(10)[-500:]}"], None
    if reason := refusal(artifact):
        return [f"holdout.sample wrote an artifact the verifier refuses: {reason}"], None
    trained = Trained(
        side="baseline", seed=seed, returncode=0, seconds=0.0, compute=None, artifact=str(artifact),
        digest=digest(artifact), tail="",
    )  # fmt: skip
    out, refused = score_step(hold, evaluator, trained, holdout, root / "score", timeout, walls)
    if out is None:
        return [f"holdout.command refused the sample: {refused}"], None
    if out.returncode != 0:
        return [f"holdout.command {_ended(out)} on the sample holdout.sample wrote: {out.tail(10)[-500:]}"], out
    return [p for name in [hold.metric, *hold.guards] if (p := _printed(out, name, name == hold.metric))], out


def _ended(out: Outcome) -> str:
    return "timed out" if out.returncode is None else f"exited {out.returncode}"


def _printed(out: Outcome, name: str, primary: bool) -> str | None:
    """Why `name` is not usable in what the evaluator printed (None: a finite number)."""
    field = "holdout.metric" if primary else f"holdout.guards.{name}"
    if name not in out.values:
        keys = sorted(out.values)
        said = ", ".join(keys[:MAX_NAMED]) + (f" and {len(keys) - MAX_NAMED} more" if len(keys) > MAX_NAMED else "")
        return (
            f"holdout.command printed {said or 'no `key: value` line'} on the sample, but {field} is {name!r}: "
            f"the verifier would find no {name} and fail every verification; make the evaluator print "
            f"`{name}: <value>`, or set {field} to the name it prints"
        )
    value = out.value(name)
    if value is None or not math.isfinite(value):
        return f"holdout.command printed `{name}: {out.values[name][:40]}` on the sample, not a finite number"
    return None
