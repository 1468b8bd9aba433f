"""GitHub, W&B and local-fleet checks of `senpai preflight`, and the runner over every area."""

from pathlib import Path
from typing import TYPE_CHECKING

from senpai.config.harness import HarnessConfig, LocalFleetSettings
from senpai.errors import SenpaiError
from senpai.forge.base import Access
from senpai.forge.port import ForgeReadAdmin
from senpai.ledger.labels import LABELS
from senpai.preflight import CheckResult, failed, passed, skipped
from senpai.preflight.llm import llm_checks
from senpai.tracker.base import Tracker

if TYPE_CHECKING:  # the kubernetes client is imported only when a kubernetes fleet is configured
    from senpai.fleet.k8s_cluster import ClusterProbe

GH = "github"


def token_checks(cfg: HarnessConfig, access: Access | None) -> list[CheckResult]:
    """The token env is set; a classic token (X-OAuth-Scopes present) has the repo scope.

    `access` is what the forge answered (None: it refused).  An unset token is a failure on every
    forge: GitHub and the local forge alike answer writes without one with 401.
    """
    env = cfg.forge.token_env
    out = []
    if cfg.forge.token():
        out.append(passed(GH, "token", f"${env} is set"))
    else:
        fix = f"export {env}=<token> (classic: scope repo; fine-grained: contents, issues and pull requests read/write;"
        fix += " local forge: the bot_token `senpai forge serve` printed, or `senpai forge token --data DIR`)"
        out.append(failed(GH, "token", f"${env} is not set or empty", fix))
    if access is None:
        return out
    if access.scopes is None:
        out.append(passed(GH, "token scopes", "no X-OAuth-Scopes header (fine-grained token, app or local forge)"))
    elif "repo" in access.scopes:
        out.append(passed(GH, "token scopes", f"classic token with {', '.join(access.scopes)}"))
    else:
        fix = "create a classic token with the repo scope, or a fine-grained token with contents/issues/PRs read-write"
        out.append(failed(GH, "token scopes", f"classic token without repo: {', '.join(access.scopes) or 'no scopes'}", fix))
    return out


def forge_checks(cfg: HarnessConfig, forge: ForgeReadAdmin) -> list[CheckResult]:
    """Token, scopes, push access, base branch and labels (creating the missing labels)."""
    repo, base = cfg.forge.repo, cfg.forge.base_branch
    try:
        access = forge.access()
    except SenpaiError as e:
        fix = f"check forge.repo ({repo}) and forge.base_url ({cfg.forge.base_url}), and that the token can see the repository"
        return [*token_checks(cfg, None), failed(GH, "repository", str(e), fix)]
    out = token_checks(cfg, access)
    if access.push:
        out.append(passed(GH, "push access", f"{access.login} can push to {repo}"))
    else:
        fix = f"add {access.login} to {repo} as a collaborator with write access (or use a token of a user who has it)"
        out.append(failed(GH, "push access", f"{access.login} cannot push to {repo}", fix))
    try:
        sha = forge.branch_sha(base)
        out.append(passed(GH, "base branch", f"{base} at {sha[:12]}"))
    except SenpaiError as e:
        fix = f"push the research base branch: git push origin <main>:{base} (or set forge.base_branch)"
        out.append(failed(GH, "base branch", f"{base}: {e}", fix))
    try:
        created = forge.ensure_labels(LABELS)
        detail = f"created {', '.join(created)}" if created else f"all {len(LABELS)} present"
        out.append(passed(GH, "labels", detail))
    except SenpaiError as e:
        out.append(failed(GH, "labels", str(e), f"create the labels {', '.join(LABELS)} on {repo} (needs triage access)"))
    return out


def tracker_checks(cfg: HarnessConfig, tracker: Tracker) -> list[CheckResult]:
    """Offline: nothing to reach. Online: the key and the entity (W&B viewer query)."""
    if cfg.tracker.resolved_mode() == "offline":
        return [passed("wandb", "W&B", "offline mode, runs sync later (senpai sync --config <this config>)")]
    try:
        who = tracker.check_access()
    except SenpaiError as e:
        fix = "export WANDB_API_KEY=<key from wandb.ai/authorize>; check tracker.entity; or set tracker.mode: offline"
        return [failed("wandb", "W&B", str(e), fix)]
    return [passed("wandb", "W&B", f"online: {who}, project {cfg.tracker.project}")]


def holdout_check(cfg: HarnessConfig) -> CheckResult:
    """The local fleet's sealed holdout: `fleet.holdout_dir` is a folder with at least one entry,
    and apart from the folders jobs read and write (`fleet.dir`, `state_dir`, `tracker.dir`),
    compared with symlinks resolved (none set: skipped, the evaluator then gets an empty folder
    as `{holdout}`). Call only with a local fleet."""
    assert isinstance(cfg.fleet, LocalFleetSettings)
    where = cfg.fleet.holdout_dir
    if where is None:
        return skipped("local", "sealed holdout", "fleet.holdout_dir is not set: the score step gets an empty {holdout}")
    fix = "put the holdout your evaluator reads in that folder, outside every work copy (or fix fleet.holdout_dir)"
    if not Path(where).is_dir():
        return failed("local", "sealed holdout", f"fleet.holdout_dir {where} is not a folder", fix)
    try:
        holdout = Path(where).resolve()
        if overlap := _shared_folder(cfg, holdout):
            setting, detail = overlap
            move = f"move the holdout to a folder apart from {setting} and set fleet.holdout_dir to it"
            return failed("local", "sealed holdout", f"fleet.holdout_dir {where} {detail}", move)
        entries = sum(1 for _ in holdout.iterdir())
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop
        return failed("local", "sealed holdout", f"fleet.holdout_dir {where} cannot be checked: {e}", fix)
    if entries == 0:
        return failed("local", "sealed holdout", f"fleet.holdout_dir {where} is empty (0 entries)", fix)
    return passed("local", "sealed holdout", f"{where} ({entries} entries)")


def _shared_folder(cfg: HarnessConfig, holdout: Path) -> tuple[str, str] | None:
    """(setting, what is wrong) if resolved `holdout` lies inside, or holds, a folder that jobs read
    and write: the fleet's job folders, the state folder or the W&B folder. Raises OSError, RuntimeError."""
    assert isinstance(cfg.fleet, LocalFleetSettings)
    for setting, folder in (("fleet.dir", cfg.fleet.dir), ("state_dir", cfg.state_dir), ("tracker.dir", cfg.tracker.dir)):
        shared = Path(folder).resolve()
        if holdout.is_relative_to(shared):
            return setting, f"is inside {setting} {folder}, which job code can read"
        if shared.is_relative_to(holdout):
            return setting, f"holds {setting} {folder}, which jobs write into"
    return None


def run_preflight(cfg: HarnessConfig, forge: ForgeReadAdmin, tracker: Tracker, probe: "ClusterProbe | None") -> list[CheckResult]:
    """Every check, in report order: github, wandb, llm, then the sealed holdout (local fleet) or
    the cluster (`probe` None: local fleet, skipped)."""
    results = forge_checks(cfg, forge) + tracker_checks(cfg, tracker) + llm_checks(cfg)
    if probe is None:
        local = [holdout_check(cfg)] if isinstance(cfg.fleet, LocalFleetSettings) else []
        return results + local + [skipped("cluster", "cluster", f"fleet backend {cfg.fleet.backend}: no cluster to check")]
    from senpai.preflight.cluster import cluster_checks

    return results + cluster_checks(cfg, probe)
