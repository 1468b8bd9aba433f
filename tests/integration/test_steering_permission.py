"""Trust by permission, over HTTP: the real local forge (behind `tests/fault_proxy.py`, which counts
every request and can fail the permission route), the PyGithub adapter, and the wrapper's own
steering parts (`tests/steering_tick.py`: HumanReader, steering_actions, Dispatcher) and merge gate
(`transitions.decide`).

The cast: `rita` reads (author_association NONE), `mona` is an org member who reads (MEMBER, the
association GitHub gives any member of the owning organisation), `tess` is an org member with write
(MEMBER too), `alice` a collaborator (COLLABORATOR, write)."""

import re

import pytest
import steering_tick
import yaml
from fault_proxy import FaultProxy
from forge_fixtures import TOKEN, add_collaborator, commit_and_push, hypothesis, target_yaml, user_token

from senpai.config.harness import HarnessConfig
from senpai.config.target import TargetConfig
from senpai.errors import TransientError
from senpai.forge.github import GitHubForge
from senpai.ledger import transitions
from senpai.ledger.blocks import Decision, Verification
from senpai.ledger.gate import fingerprint
from senpai.ledger.labels import STEER, ExperimentState, with_status
from senpai.ledger.table import LedgerReader

BRANCH = "senpai/ada/h-wide"
PERMISSION = re.compile(r"^GET /repos/[^/]+/[^/]+/collaborators/([^/]+)/permission$")


def _config(forge: GitHubForge, **forge_settings) -> HarnessConfig:
    settings = {"base_url": forge.settings.base_url, "repo": forge.settings.repo, **forge_settings}
    return HarnessConfig.model_validate(
        {
            "forge": settings,
            "tracker": {"dir": "/tmp/w"},
            "fleet": {"dir": "/tmp/f"},
            "state_dir": "/tmp/s",
            "students": [{"name": "ada"}],
            "max_experiments": 4,
        }
    )


def _verified_pr(bot: GitHubForge, tmp_path) -> tuple[int, str]:
    """A PR in verifying whose head passed verification, on a target that asks approval of every
    merge: (number, the fingerprint an approval must name)."""
    files = {"senpai.yaml": target_yaml({"rule": "welch"}, approval={"always": True}), "params.json": '{"width": 32}\n'}
    base = commit_and_push(bot, tmp_path / "seed", "advisor", files)
    head = commit_and_push(bot, tmp_path / "seed", BRANCH, {"params.json": '{"width": 128}\n'}, start="advisor")
    pull = transitions.open_experiment(bot, hypothesis(base, "h-wide", {"width": 128}), BRANCH, "advisor", "wider")
    bot.set_labels(pull.number, with_status(pull.labels, ExperimentState.VERIFYING))
    v = Verification(
        pr=pull.number, candidate=head, baseline=base, metric="acc", direction="maximize", seeds=[0, 1, 2],
        candidate_values=[0.95, 0.952, 0.951], baseline_values=[0.80, 0.81, 0.799], candidate_mean=0.951,
        baseline_mean=0.803, improvement=0.148, noise_floor=None, rule="welch", statistic=40.0, p_value=1e-5,
        candidate_seconds=[10.0] * 3, baseline_seconds=[10.0] * 3, compute_ratio=1.0, passed=True, reason="acc better",
    )  # fmt: skip
    transitions.record_verification(bot, bot.get_pull(pull.number), v)
    return pull.number, fingerprint(head, base, v)


def _merge(bot: GitHubForge, cfg: HarnessConfig, pr: int) -> None:
    """The advisor's merge verdict through the merge gate (`transitions.decide`)."""
    pull = bot.get_pull(pr)
    exp = LedgerReader(bot).experiment(pull)
    target = TargetConfig.model_validate(yaml.safe_load(bot.read_file("senpai.yaml", "advisor")))
    d = Decision(pr=pr, head=pull.head_sha, verdict="merge", reason="verified", metric="acc")
    transitions.decide(bot, pull, exp, d, target, bot.branch_sha("advisor"), trusted=cfg.forge.trusted)


def _asked(proxy: FaultProxy) -> dict[str, int]:
    """Permission requests so far, by login (304s too)."""
    out: dict[str, int] = {}
    for route, n in proxy.requests.items():
        if m := PERMISSION.match(route):
            out[m[1]] = out.get(m[1], 0) + n
    return out


def _acks(bot: GitHubForge, number: int) -> list[str]:
    return [c.body for c in bot.list_comments(number) if c.user == bot.login and "<!-- senpai:ack:" in c.body]


@pytest.fixture
def proxied(local_forge, forge_repo):
    """(the bot's adapter, the proxy every request of it goes through, `as_(login, role)`: another
    user's adapter, and the bot's adapter straight to the forge, for the pushes of the setup)."""
    direct, settings = forge_repo
    failures = dict.fromkeys(("500", "502", "503", "429", "reset_before", "reset_after"), 1.0)  # no `slow`: it answers
    with FaultProxy(local_forge.base_url, rate=0.0, only="/permission$", weights=failures) as proxy:
        through = settings.model_copy(update={"base_url": proxy.url})
        bot = GitHubForge(through, TOKEN, attempts=2, sleep=lambda _: None)

        def as_(login: str, role: str = "read") -> GitHubForge:
            return GitHubForge(through, user_token(local_forge, login, role))

        yield bot, proxy, as_, direct


def test_commands_that_change_state_need_write_permission_not_an_association(local_forge, proxied, tmp_path):
    bot, proxy, as_, direct = proxied
    pr, fp = _verified_pr(direct, tmp_path)
    add_collaborator(local_forge.base_url, bot.settings.repo, "alice")
    rita, mona, alice = as_("rita"), as_("mona", "member"), as_("alice")
    tess = as_("tess", "member")
    add_collaborator(local_forge.base_url, bot.settings.repo, "tess")
    issue = alice.create_issue("steering", "Steer here.", [STEER]).number

    # a read-only user and a read-only org member: approve, stop, caps, try, pause change nothing
    rita.create_comment(pr, f"/senpai approve {fp}")
    rita.create_comment(issue, "/senpai caps experiments=9\n/senpai try width=64")
    mona.create_comment(pr, f"/senpai approve {fp}")
    mona.create_comment(pr, "/senpai stop")
    mona.create_comment(issue, "/senpai pause\n/senpai caps experiments=9\n/senpai try width=64")
    cfg = _config(bot)
    assert cfg.forge.trusted == ["OWNER", "COLLABORATOR"]  # MEMBER is not trusted by default
    proxy.requests.clear()
    read = steering_tick.read(bot, cfg)
    # one permission request per author who could hold write, per refresh (the bot and NONE authors: none)
    assert _asked(proxy) == {"alice": 1, "mona": 1}
    assert steering_tick.act(bot, cfg, read) == ([], [])
    view = steering_tick.read(bot, cfg)[2]
    assert _asked(proxy) == {"alice": 2, "mona": 2}
    assert view.commands == () and [m.message.body for m in view.free_text] == ["Steer here."]  # alice's issue
    assert not view.state.paused and view.state.experiments is None and view.state.tries == ()
    assert view.state.approvals == {} and view.state.stops == {}
    assert bot.get_pull(pr).state == "open" and _acks(bot, pr) == [] and _acks(bot, issue) == []

    # an org member is heard once MEMBER is trusted for free text, but their commands are refused, once
    member_cfg = _config(bot, trusted=["OWNER", "MEMBER", "COLLABORATOR"])
    done, view = steering_tick.tick(bot, member_cfg)
    assert len(done) == 3 and view.commands == ()
    refusals = _acks(bot, pr) + _acks(bot, issue)
    assert len(refusals) == 3 and all("need write permission on this repository, and you have none" in a for a in refusals)
    assert not view.state.paused and view.state.approvals == {} and view.state.tries == ()
    assert bot.get_pull(pr).state == "open"

    # an org member with write (MEMBER too) and a collaborator: their commands work, with the default config
    tess.create_comment(issue, "/senpai caps experiments=7")
    alice.create_comment(issue, "/senpai try width=64\n/senpai pause")
    alice.create_comment(pr, f"/senpai approve {fp}")
    done, view = steering_tick.tick(bot, cfg)
    assert len(done) == 3, done
    assert view.state.experiments == 7 and view.state.paused and [t.params for t in view.state.tries] == [{"width": 64}]
    assert view.state.approvals == {pr: {fp: "alice"}}
    _merge(bot, cfg, pr)  # the gate counts alice's approval: she may write
    assert bot.get_pull(pr).merged


def test_a_forge_error_reading_a_permission_makes_the_command_wait(local_forge, proxied):
    bot, proxy, as_, _ = proxied
    add_collaborator(local_forge.base_url, bot.settings.repo, "alice")
    alice = as_("alice")
    issue = alice.create_issue("steering", "/senpai caps experiments=3", [STEER]).number
    cfg = _config(bot)
    done, view = steering_tick.tick(bot, cfg)
    assert view.state.experiments == 3 and len(done) == 1

    alice.create_comment(issue, "/senpai pause")
    proxy.rate = 1.0  # every permission request fails (500, reset, 503...): senpai's failure, not alice's
    ledger, exps, view = steering_tick.read(bot, cfg)  # the refresh goes on
    assert view.commands == () and view.state.experiments == 3  # the pause waits; the acked caps still count
    assert steering_tick.act(bot, cfg, (ledger, exps, view)) == ([], [])
    assert len(_acks(bot, issue)) == 1

    proxy.rate = 0.0
    done, view = steering_tick.tick(bot, cfg)
    assert len(done) == 1 and view.state.paused and view.state.experiments == 3


def test_the_merge_gate_waits_when_an_approvers_permission_cannot_be_read(local_forge, proxied, tmp_path):
    bot, proxy, as_, direct = proxied
    pr, fp = _verified_pr(direct, tmp_path)
    add_collaborator(local_forge.base_url, bot.settings.repo, "alice")
    as_("alice").create_comment(pr, f"/senpai approve {fp}")
    cfg = _config(bot)
    steering_tick.tick(bot, cfg)
    proxy.rate = 1.0
    with pytest.raises(TransientError, match="permission of alice could not be read"):
        _merge(bot, cfg, pr)
    assert bot.get_pull(pr).state == "open"  # nothing refused, nothing closed: the merge is tried again
    proxy.rate = 0.0
    _merge(bot, cfg, pr)
    assert bot.get_pull(pr).merged


def test_a_command_folded_in_html_is_not_applied(local_forge, proxied):
    bot, _, as_, _ = proxied
    add_collaborator(local_forge.base_url, bot.settings.repo, "alice")
    alice = as_("alice")
    issue = alice.create_issue("steering", "Steer here.", [STEER]).number
    alice.create_comment(issue, "<details><summary>logs</summary>\n\n/senpai pause\n\n</details>")
    alice.create_comment(issue, "/senpai caps experiments=5\n\n<div>\n\nnotes\n\n</div>")
    view = steering_tick.tick(bot, _config(bot))[1]
    assert not view.state.paused and view.state.experiments is None
    assert view.commands == () and len(view.free_text) == 3  # the issue, then free text: no line of it is a command
