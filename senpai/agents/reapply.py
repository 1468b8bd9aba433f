"""Re-applying a params-only PR onto a moved base by writing its params there: no student attempt.

After a merge, the other PRs of the round conflict with the new base in the params file (both
changed it). A PR that changes nothing else is re-applied by senpai itself: the new base's params
file with the PR's own params written over it, committed on the PR's branch with the old head
and the new base as parents (a fast-forward of the branch that contains the base, so the forge
can merge it). Built from git objects alone: the clone's checkout is not touched.

When the new head's tree is one the PR's evidence trained before (the usual case: the merge
changed only params the PR sets too), that evidence stands for it, and the verifier reuses its
own numbers for the tree (`senpai.verifier.reuse`): the re-apply trains nothing.
"""

import tempfile
from pathlib import Path

from senpai.agents.params import params_format, parse_params, write_params
from senpai.errors import ConfigError, PermanentError
from senpai.forge.base import PullRequest
from senpai.job.context import TurnContext
from senpai.ledger.blocks import Reapply
from senpai.ledger.experiment import Experiment


def params_onto_base(ctx: TurnContext, pr: PullRequest, exp: Experiment, base: str) -> Reapply | None:
    """The commit that writes `pr`'s params onto `base` (already in the clone, made and not yet
    pushed), as the record to post; None if the PR is not params-only (its head changes any other
    path since its merge base with `base`, or removes a param) or its params cannot be read or
    written (ConfigError, e.g. TOML: the student's path re-applies it then). The params written: the base's file,
    then every param the head changed since the merge base, then the hypothesis's own params
    (single-arm). The commit's identity and date are fixed (the base's date), so a retry after a
    crash builds the same sha. Raises TransientError if fetching the head fails."""
    repo, file = ctx.repo, ctx.target.params.file
    repo.git("fetch", "--quiet", "origin", f"+{pr.head_sha}:refs/senpai/reapply", network=True)
    if repo.changed_paths(base, pr.head_sha) != [file]:
        return None
    merge_base = repo.git("merge-base", base, pr.head_sha).strip()
    try:
        before, after, onto = (_params_at(ctx, sha) for sha in (merge_base, pr.head_sha, base))
    except ConfigError:
        return None
    if set(before) - set(after):
        return None  # a removed param is not a params change senpai can write
    own = exp.hypothesis.params if exp.hypothesis and not exp.hypothesis.arms else {}
    params = {**onto, **{k: v for k, v in after.items() if before.get(k, _MISSING) != v}, **own}
    try:
        tree = _tree_with(ctx, base, file, params)
    except ConfigError:  # a format senpai reads but cannot write (TOML): its student re-applies it
        return None
    head = _commit(ctx, tree, [pr.head_sha, base], f"senpai: re-apply the params of #{pr.number} onto {base}")
    measured = next((ev.head for ev in reversed(exp.evidence) if ev.outcome == "ok" and _tree_of(ctx, ev.head) == tree), None)
    return Reapply(pr=pr.number, head=head, replaces=pr.head_sha, base=base, tree=tree, measured=measured)


_MISSING = object()


def _params_at(ctx: TurnContext, sha: str) -> dict:
    file = ctx.target.params.file
    text = ctx.repo.git("show", f"{sha}:{file}")
    return parse_params(text, params_format(file), f"{file} at {sha[:8]}")


def _tree_with(ctx: TurnContext, base: str, file: str, params: dict) -> str:
    """The tree of `base` with `file` holding `params`, written as `params.write_params` writes it."""
    with tempfile.TemporaryDirectory(dir=ctx.workdir) as tmp:
        path = Path(tmp) / Path(file).name
        write_params(path, params)
        blob = ctx.repo.git("hash-object", "-w", str(path)).strip()
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        ctx.repo.git_env(index, "read-tree", base)
        ctx.repo.git_env(index, "update-index", "--add", "--cacheinfo", f"100644,{blob},{file}")
        return ctx.repo.git_env(index, "write-tree").strip()


def _commit(ctx: TurnContext, tree: str, parents: list[str], message: str) -> str:
    when = ctx.repo.git("show", "-s", "--format=%cI", parents[-1]).strip()
    args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-m", message]
    return ctx.repo.git_env({"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}, *args).strip()


def _tree_of(ctx: TurnContext, sha: str) -> str | None:
    try:
        return ctx.repo.git("rev-parse", f"{sha}^{{tree}}").strip()
    except PermanentError:  # an evidence head the clone does not have: not this tree
        return None
