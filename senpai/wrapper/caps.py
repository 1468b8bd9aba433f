"""Fleet caps: the caps in force, which are reached, and the issue that reports it.

Both halves live here, as for patience: `exhausted` gates the policy's new work (`llm_held` its
LLM turns), `exhaustion_issue` is the issue humans get, once per set of caps reached (its marker
digests them with their values, `report_marker`: a `/senpai caps` that raises another cap opens no
new report; one that raises the reached cap, reached again later, gets a new one). The caps are
the harness config's (`max_experiments`, `caps`), each overridden by the newest `/senpai caps` that set it
(`SteerState`); the spend is the ledger's (`senpai.ledger.spend`), so a restart changes nothing.
"""

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta

from senpai.config.harness import HarnessConfig
from senpai.config.roles import Role
from senpai.forge.base import Issue
from senpai.ledger.baseline import Merge, best_merge, merges
from senpai.ledger.comments import cell, count, dollars, number
from senpai.ledger.escalation import marked
from senpai.ledger.experiment import Experiment
from senpai.ledger.inbox import SteerState
from senpai.ledger.labels import ATTENTION, STEER, ExperimentState
from senpai.ledger.records import by_bot, html_blocks, neutral
from senpai.ledger.spend import Spend, spend
from senpai.wrapper.actions import CloseIssue, OpenIssue
from senpai.wrapper.world import World

MONEY = ("dollars", "tokens", "gpu_hours", "cpu_hours")
LLM_CAPS = frozenset({"dollars", "tokens"})  # caps of LLM spend: once one is reached no LLM turn starts (`llm_held`)
# states senpai moves on by itself; a blocked PR waits for a human and does not hold the report back
SETTLING = {ExperimentState.WIP, ExperimentState.CHANGES, ExperimentState.REVIEW, ExperimentState.VERIFYING}
TRIED_SHOWN = 20  # decided experiments listed in a report, newest first
_REPORT = re.compile(r"<!-- senpai:exhausted:[0-9a-f]{12} -->")  # an exhaustion report's marker (`report_marker`)
UNREAD = "Comments here are no longer read: steer on an open `senpai:steer` issue or on a PR."
SUPERSEDED = f"The fleet caps reached, or their values, changed since this report: that one says what stops senpai now. {UNREAD}"
STALE = (
    "No fleet cap is reached any more: senpai goes on with new work, unless a human paused it "
    f"(`/senpai pause`), and this report no longer holds. {UNREAD}"
)


def caps_in_force(steer: SteerState, cfg: HarnessConfig) -> dict[str, float | int | datetime]:
    """The caps in force, by `/senpai caps` key (`experiments`, `dollars`, `tokens`, `gpu_hours`,
    `cpu_hours`, `end`); a key without a cap is absent."""
    out: dict[str, float | int | datetime] = {}
    experiments = steer.experiments if steer.experiments is not None else cfg.max_experiments
    if experiments is not None:
        out["experiments"] = experiments
    for key in MONEY:
        value = steer.caps.get(key, getattr(cfg.caps, key))
        if value is not None:
            out[key] = value
    end = steer.caps.get("end_at")
    end_at = datetime.fromisoformat(end) if isinstance(end, str) else cfg.caps.end_at
    if end_at is not None:
        out["end"] = end_at
    return out


def steered_caps(steer: SteerState) -> list[str]:
    """The keys of `caps_in_force` a trusted human's `/senpai caps` set (it wins over the config), sorted."""
    keys = {"end" if field == "end_at" else field for field in steer.caps}
    return sorted(keys | ({"experiments"} if steer.experiments is not None else set()))


def spent(exps: list[Experiment], cfg: HarnessConfig, steer: SteerState | None = None) -> Spend:
    """The ledger's spend, with each student's configured CPU cores; `steer`: the steering state
    read with the issues, whose `advisor_turns` (the advisor's turns about no PR) count too."""
    return spend(exps, {s.name: s.cpus for s in cfg.students}, steer.advisor_turns if steer else ())


def exhausted(exps: list[Experiment], steer: SteerState, now: datetime, cfg: HarnessConfig) -> dict[str, str]:
    """Cap key -> "spent of cap" for every cap reached at `now` (empty: none)."""
    in_force, out = caps_in_force(steer, cfg), {}
    # the spend walks every experiment's records: only a cap of it needs it, not a count or an end
    used = spent(exps, cfg, steer) if set(in_force) & set(MONEY) else Spend(experiments=len(exps))
    for key, cap in in_force.items():
        if key == "end":
            if now >= cap:
                out[key] = f"{cap.isoformat(timespec='minutes')} has passed"  # shown after its key: "end 2026-... has passed"
        elif getattr(used, key) >= cap:
            out[key] = f"{_amount(key, getattr(used, key))} of {_amount(key, cap)}"
    return out


_last: tuple[World, HarnessConfig, dict[str, str]] | None = None  # `caps_reached`'s one remembered answer


def caps_reached(w: World, cfg: HarnessConfig) -> dict[str, str]:
    """`exhausted` at world `w` (frozen, read once a tick), computed once per world and config: the
    policy asks several times a tick, and the spend walks every experiment. Do not mutate the answer."""
    global _last
    last = _last
    if last is not None and last[0] is w and last[1] is cfg:
        return last[2]
    out = exhausted(w.exps, w.steer, w.now, cfg)
    _last = (w, cfg, out)
    return out


def llm_held(reached: dict[str, str], cfg: HarnessConfig, role: Role) -> bool:
    """True when no turn of `role` (advisor or student) may start: an LLM agent runs it (openhands)
    and a cap of LLM spend (`dollars`, `tokens`) is among the `reached` ones (`exhausted`), whatever
    `on_exhausted` says; the one exception, the advisor's answer to a trusted human's message, is
    the policy's. A search role spends no LLM money and is never held; the verifier has no LLM."""
    return bool(LLM_CAPS.intersection(reached)) and role in (Role.ADVISOR, Role.STUDENT) and getattr(cfg.runtime, role).llm_agent


def stops_jobs(reached: dict[str, str], cfg: HarnessConfig) -> bool:
    """True when the `reached` caps (`exhausted`) stop running student and verifier jobs: the config
    says `caps.on_exhausted: stop` and a cap other than the experiment cap is among them (that
    one only keeps new experiments from opening)."""
    return cfg.caps.on_exhausted == "stop" and bool(set(reached) - {"experiments"})


def consequence(reached: dict[str, str], cfg: HarnessConfig) -> str:
    """What reaching the caps `reached` (`exhausted`, not empty) does, as one clause for people: no
    new experiment opens; running student and verifier jobs are stopped (`stops_jobs`) or finish;
    an LLM role's new turns are held (`llm_held`). `senpai status` and the exhaustion report say it."""
    held = [role for role in (Role.ADVISOR, Role.STUDENT) if llm_held(reached, cfg, role)]
    if stops_jobs(reached, cfg):
        out = "no new experiment opens, and running student and verifier jobs are stopped (`caps.on_exhausted: stop`)"
    elif held:
        out = "no new experiment opens; running jobs finish"
    else:
        out = "no new experiment opens; running jobs finish and open experiments go on until decided"
    if held:
        out += (
            f"; no new LLM turn of the {' or the '.join(held)} starts (running ones finish), except the advisor's"
            " answers to trusted humans' messages, so PRs waiting for one stay where they are"
        )
    return out


def exhaustion_issue(w: World, cfg: HarnessConfig) -> OpenIssue | None:
    """The exhaustion report once a cap is reached and the work running then has settled (no
    experiment in SETTLING; at once when `on_exhausted: stop` stops it, or when an LLM cap holds an
    LLM role's turns, `llm_held`, so the work cannot settle): one per set of caps reached and their
    values (`report_marker`), none once the bot's steering issues carry it, and none while a human
    has paused anyway."""
    cut = caps_reached(w, cfg)
    if not cut or w.steer.paused:
        return None
    stopping = stops_jobs(cut, cfg) or any(llm_held(cut, cfg, role) for role in (Role.ADVISOR, Role.STUDENT))
    if not stopping and any(e.state in SETTLING for e in w.exps):
        return None  # running work finishes first: the report then holds its outcome, not a snapshot of it
    in_force, generation = caps_in_force(w.steer, cfg), 0
    marker = report_marker(cut, in_force)
    # a report the bot closed (no cap reached any more, or superseded: its close drops ATTENTION,
    # `_closing`) is never reopened: the same caps reached again at the same values are a new report,
    # keyed by how many such were closed before. One a human closed (ATTENTION kept) was read: none.
    while (found := marked(w.issues, marker, w.bot)) and all(i.state != "open" and ATTENTION not in i.labels for i in found):
        generation += 1
        marker = report_marker(cut, in_force, generation)
    older = tuple(_closing(i, "superseded", SUPERSEDED) for i in open_reports(w) if marker not in html_blocks(i.body))
    if found and not older:  # the loop's last look-up is this marker's
        return None
    title = "senpai stopped: fleet caps exhausted (" + "; ".join(f"{k} {v}" for k, v in cut.items()) + ")"
    return OpenIssue(marker, title, report(w, cfg, cut) + f"\n\n{marker}", (STEER, ATTENTION), older)


def stale_reports(w: World, cfg: HarnessConfig) -> list[CloseIssue]:
    """The bot's open exhaustion reports once no cap is reached (the reached ones were raised, by a
    `/senpai caps` or the config), each closed with a comment that senpai goes on: no open report
    says "stopped" while senpai works."""
    if caps_reached(w, cfg):
        return []
    return [_closing(i, "no fleet cap is reached any more", STALE) for i in open_reports(w)]


def open_reports(w: World) -> list[Issue]:
    """The bot's exhaustion reports still open among the steering issues: issues the bot wrote
    (`records.by_bot`: anyone can copy a marker into theirs) whose body ends with a report's marker
    as an HTML block of its own (`records.html_blocks`: a marker quoted in its text counts nothing)."""
    return [
        i for i in w.issues if i.state == "open" and by_bot(i, w.bot) and any(_REPORT.fullmatch(b) for b in html_blocks(i.body))
    ]


def _closing(i: Issue, reason: str, note: str) -> CloseIssue:
    """The close of report `i`: it keeps its labels but ATTENTION (it asks nothing any more), STEER
    among them, so the acks of the commands on it still count (`senpai.wrapper.humans`)."""
    return CloseIssue(i.number, reason, note, tuple(label for label in i.labels if label != ATTENTION))


def report_marker(reached: dict[str, str], in_force: dict[str, float | int | datetime], generation: int = 0) -> str:
    """The exhaustion report's marker: a digest of the caps `reached` (`exhausted`), each with its
    value in force, so the report is keyed by what stops senpai. A cap raised or set that is not
    reached changes nothing; the reached one raised and reached again, or another one reached as
    well, is a new report. `generation`: how many reports of these same caps and values were closed
    before (0: the first, whose marker names nothing more)."""
    keyed: dict[str, float | int | str] = {
        k: v.astimezone(UTC).isoformat() if isinstance(v, datetime) else float(v) for k, v in in_force.items() if k in reached
    }
    if generation:
        keyed["#"] = generation
    return f"<!-- senpai:exhausted:{hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:12]} -->"


def report(w: World, cfg: HarnessConfig, reached: dict[str, str]) -> str:
    """The exhaustion report, Markdown: what is known (the last verified merge in merge order and
    the current best, `best_merge`, both on the holdout), what evidence is missing, what was tried,
    and the caps needed to go on. Every text from the ledger is neutralised."""
    used, in_force = spent(w.exps, cfg, w.steer), caps_in_force(w.steer, cfg)
    named = [e.hypothesis.metric.name for e in w.exps if e.hypothesis]
    metric = w.target.metric.name if w.target else named[-1] if named else "metric"
    merged = sum(e.state == ExperimentState.MERGED for e in w.exps)
    open_ = [e for e in w.exps if not e.decided]
    decided = sorted((e for e in w.exps if e.decided), key=lambda e: -e.pr)
    listed, effect = ", ".join(f"**{k}** {v}" for k, v in reached.items()), consequence(reached, cfg)
    lines = [
        f"Reached: {listed}. {effect[0].upper()}{effect[1:]}.",
        "",
        "## What is known",
        f"- Baseline: {_baseline(merges(w.exps))}",
        f"- Best: {_best(best_merge(w.exps))}",
        f"- Experiments: {len(w.exps)} opened, {merged} merged, "
        f"{sum(e.state == ExperimentState.CLOSED for e in w.exps)} closed, {len(open_)} open"
        + (": " + ", ".join(f"#{e.pr} ({e.state})" for e in sorted(open_, key=lambda e: e.pr)) if open_ else ""),
        f"- Spent: {_spend_line(used)}",
        "",
        "## What evidence is missing",
        *(_missing(e, w.base_sha) for e in sorted(open_, key=lambda e: e.pr)),
        *_unmeasured(decided),
        *([] if open_ or _unmeasured(decided) else ["- Nothing: every experiment was decided, each on its holdout."]),
        "",
        f"## What was tried ({len(decided)} decided{f', newest {TRIED_SHOWN}' if len(decided) > TRIED_SHOWN else ''})",
        *(_tried(e, metric) for e in decided[:TRIED_SHOWN]),
        *([] if decided else ["- Nothing decided yet."]),
        "",
        "## Caps needed to go on",
        *(f"- {k}: {_amount(k, in_force[k])} now; {_need(k, in_force[k], used, w)}" for k in reached),
        "",
        f"To go on, comment `{_command(reached, in_force, used, w)}` here (a trusted human; any cap may be raised).",
    ]
    return neutral("\n".join(lines))


def _baseline(order: list[Merge]) -> str:
    """The last verified merge (`merges`, in merge order) and its holdout value."""
    if not order:
        return "the base branch as it was (no verified merge yet)"
    last = order[-1]
    return f"#{last.pr} merged last" + (f", holdout {last.metric} = {number(last.value)}" if last.value is not None else "")


def _best(best: Merge | None) -> str:
    if best is None:
        return "no verified merge measured yet"
    return f"#{best.pr}, holdout {best.metric} = {number(best.value)} (the best holdout of the verified merges)"


def _missing(e, base_sha: str) -> str:
    if e.state in (ExperimentState.WIP, ExperimentState.CHANGES):
        what = f"student evidence ({e.attempts} of {e.hypothesis.budget.attempts if e.hypothesis else 1} attempts made)"
    elif e.state == ExperimentState.REVIEW:
        what = "the advisor's review of its evidence"
    elif e.state == ExperimentState.VERIFYING:
        what = "the holdout verification against the current base"
    else:
        what = f"a human ({e.state})"
    return f"- #{e.pr} {e.title[:120]}: {what}"


def _unmeasured(decided: list) -> list[str]:
    """Lines for the decided experiments whose holdout was never measured: closed on validation
    alone, or failed before any verification (a later look may find them better than that)."""
    never = [e for e in decided if e.state == ExperimentState.CLOSED and not any(v.seeds for v in e.verifications)]
    if not never:
        return []
    shown = ", ".join(f"#{e.pr}" for e in never[:TRIED_SHOWN]) + (
        f" and {len(never) - TRIED_SHOWN} more" if len(never) > TRIED_SHOWN else ""
    )
    return [f"- The holdout of {len(never)} closed experiment(s) was never measured (closed on validation alone): {shown}"]


def _tried(e, metric: str) -> str:
    """One line of "What was tried": the PR's title and the decision's reason as inert `cell`s."""
    value = e.primary_value()
    reason = e.decision.reason if e.decision else str(e.state)
    shown = f"{metric} = {number(value)}" if value is not None else "no value"
    return f"- #{e.pr} ({e.state}) {cell(e.title, 120)}: {shown}; {cell(reason, 300)}"


def _amount(key: str, value) -> str:
    """A cap or a spend for people, with the ledger's formatters (`comments`): $1.50, 12,345 tokens, 2.50 h."""
    if key == "dollars":
        return dollars(value)
    if key in ("gpu_hours", "cpu_hours"):
        return f"{number(value)} h"
    return count(value) if isinstance(value, int | float) else str(value)


def _spend_line(used: Spend) -> str:
    return (
        f"{count(used.experiments)} experiments, {dollars(used.dollars)} and {count(used.tokens)} tokens of LLM, "
        f"{number(used.gpu_hours)} GPU hours, {number(used.cpu_hours)} CPU-core hours"
    )


def _suggest(key: str, cap, used: Spend, w: World):
    """A cap that allows about as many more experiments as there are students (at least 2), at the
    spend per experiment so far; at least half as much again as the cap."""
    more = max(len({e.student for e in w.exps if e.student}), 2)
    if key == "experiments":
        return cap + more
    per = getattr(used, key) / max(used.experiments, 1)
    value = max(max(cap, getattr(used, key)) + more * per, cap * 1.5)
    return int(value) + 1 if key == "tokens" else round(value + 0.005, 2)


def _need(key: str, cap, used: Spend, w: World) -> str:
    if key == "end":
        return "set a later end (ISO 8601 with a zone; the command below suggests a day from now)"
    if key == "experiments":
        return f"{_suggest(key, cap, used, w)} allows {_suggest(key, cap, used, w) - cap} more"
    per = getattr(used, key) / max(used.experiments, 1)
    return f"about {_amount(key, per)} per experiment so far: {_amount(key, _suggest(key, cap, used, w))} allows a few more"


def _command(reached: dict, in_force: dict, used: Spend, w: World) -> str:
    parts = []
    for key in reached:
        if key == "end":
            # a time to paste, not a placeholder: `<` is escaped in the report, and GitHub shows `&lt;` in code
            parts.append(f"end={(max(w.now, in_force[key]) + timedelta(days=1)).astimezone(UTC).strftime('%Y-%m-%dT%H:%MZ')}")
        else:
            parts.append(f"{key}={_suggest(key, in_force[key], used, w)}")
    return "/senpai caps " + " ".join(parts)
