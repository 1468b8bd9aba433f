"""The Forge port's parts (`ForgeReader`, `ForgeWriter`, `ForgeAdmin`): the adapter's and the fake's
parts implement one part each, the whole (`GitHubForge`, `FakeForge`) inherits them with no name of one
part shadowing another's, and the readers that are typed with `ForgeReader` work when handed
nothing else. A view of the forge that has only the reader's members (any other attribute raises)
is handed to the ledger reader, the humans' reader, the trust check and the wrapper's read of
senpai.yaml, over a ledger with an experiment, a turn record, a steering issue and a human's
message, and each reads all of it."""

import pytest
from fake_forge import FakeAdmin, FakeForge, FakeReader, FakeWriter
from forge_fixtures import commit_and_push, target_yaml
from policy_world import CFG

from senpai.cli.wiring import make_forge, make_reader
from senpai.config.harness import ForgeSettings, HarnessConfig
from senpai.forge.admin import ForgeAdmin
from senpai.forge.base import LabelSpec
from senpai.forge.github import GitHubForge
from senpai.forge.github.admin import GitHubAdmin
from senpai.forge.github.http import GitHubHttp
from senpai.forge.github.reader import GitHubReader
from senpai.forge.github.writer import GitHubWriter
from senpai.forge.port import Forge
from senpai.forge.read import ForgeReader
from senpai.forge.write import ForgeWriter
from senpai.ledger import transitions
from senpai.ledger.blocks import TurnCost, TurnUsage
from senpai.ledger.inbox import read_writers
from senpai.ledger.labels import SENPAI, STEER, student_label
from senpai.ledger.table import LedgerReader
from senpai.wrapper.humans import HumanReader
from senpai.wrapper.loop import base_target


def part(port: type) -> set[str]:
    """A part's own methods and attributes."""
    return {k for k, v in vars(port).items() if not k.startswith("_") and callable(v)} | set(
        vars(port).get("__annotations__", {})
    )


READS = part(ForgeReader)


class ReaderOnly:
    """`forge` with only `ForgeReader`'s members: a writer's or an admin's method raises."""

    def __init__(self, forge: Forge) -> None:
        object.__setattr__(self, "_forge", forge)

    def __getattr__(self, name: str):
        if name not in READS:
            raise AttributeError(f"{name} is not part of ForgeReader")
        return getattr(self._forge, name)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"{name}: a reader sets nothing on the forge")


def test_the_parts_split_the_port_without_overlap_or_remainder():
    reads, writes, admin = part(ForgeReader), part(ForgeWriter), part(ForgeAdmin)
    assert not (reads & writes or reads & admin or writes & admin)
    whole = {k for c in Forge.__mro__ if c.__module__.startswith("senpai.") for k in part(c)}
    assert reads | writes | admin == whole and len(whole) == 27 + 5  # 27 methods, 5 attributes


def methods(cls: type) -> set[str]:
    """A class's public methods, its own and those it inherits (a Protocol's: its part's only)."""
    return {k for c in cls.__mro__[:-1] for k, v in vars(c).items() if not k.startswith("_") and callable(v)}


PORT = methods(ForgeReader) | methods(ForgeWriter) | methods(ForgeAdmin)


@pytest.mark.parametrize(
    ("cls", "port"),
    [
        (GitHubReader, ForgeReader),
        (GitHubWriter, ForgeWriter),
        (GitHubAdmin, ForgeAdmin),
        (FakeReader, ForgeReader),
        (FakeWriter, ForgeWriter),
        (FakeAdmin, ForgeAdmin),
    ],
)
def test_each_part_of_the_adapter_and_the_fake_has_its_part_of_the_ports_methods_and_no_other(cls, port):
    offered, own = methods(cls), methods(port)
    assert own - offered == set(), f"{cls.__name__} lacks {sorted(own - offered)}"
    assert offered & PORT <= own, f"{cls.__name__} offers {sorted(offered & PORT - own)} too"


def names(part: object) -> dict[str, object]:
    """A part's names, its class's (methods, properties) and its instance's (state), with their values."""
    own = {k: v for c in type(part).__mro__[:-1] for k, v in vars(c).items() if not k.startswith("__")}
    return own | vars(part)


def assert_apart(parts: list[object], shared: set[str]) -> None:
    """No name of one part is another's, but the `shared` state, which each sets to the same object."""
    for i, one in enumerate(parts):
        for other in parts[i + 1 :]:
            mine, theirs = names(one), names(other)
            both = mine.keys() & theirs.keys()
            assert both <= shared, f"{type(one).__name__} and {type(other).__name__} both name {sorted(both - shared)}"
            assert all(mine[k] is theirs[k] for k in both), f"{type(one).__name__}, {type(other).__name__}: {sorted(both)}"


def test_the_adapters_parts_share_only_their_one_client_so_the_whole_inherits_them_unshadowed():
    settings = ForgeSettings(repo="o/r", base_url="http://127.0.0.1:9")
    http = GitHubHttp(settings, "t")  # lazy: no request
    reader = GitHubReader(http)
    assert_apart([reader, GitHubWriter(http, reader.written), GitHubAdmin(http)], {"settings", "_http", "_repo"})
    forge = GitHubForge(settings, "t", per_page=7, user_agent="ua")
    assert forge._http.per_page == 7 and forge._http.gh.requester.kwargs["user_agent"] == "ua"
    assert forge._written == forge.written and forge._repo is forge._http.repo  # one client, one request count


def test_the_fakes_parts_share_only_the_repository_and_the_reader_they_count_on(fake_forge):
    _, fake = fake_forge
    reader = fake.reader()
    assert_apart([reader, FakeWriter(reader), FakeAdmin(reader)], {"fake", "login", "_reader"})
    forge = FakeForge(fake, fake.owner)
    assert forge._reader is forge
    assert forge.ensure_labels({"x": LabelSpec(color="ededed")}) == ["x"] and forge.calls == 2  # the reader's count
    forge.create_issue("t", "b", ["x"])
    assert forge.calls == 3 and forge.recorded("create_issue") == [("t", "b", ["x"])]


def test_a_reading_command_gets_the_reading_part_alone_over_the_whole_adapters_client(monkeypatch):
    monkeypatch.setenv(CFG.forge.token_env, "the-token")
    reader, forge = make_reader(CFG, "status"), make_forge(CFG, "status")
    assert type(reader) is GitHubReader and not hasattr(reader, "create_comment")
    ua = [f._http.gh.requester.kwargs["user_agent"] for f in (reader, forge)]
    assert ua[0] == ua[1] and ua[0].endswith(" (status)") and reader._http.token == forge._http.token == "the-token"


def test_the_reader_only_view_refuses_every_writers_and_admins_member(fake_forge):
    forge, _ = fake_forge
    view = ReaderOnly(forge)
    for name in sorted(part(ForgeWriter) | part(ForgeAdmin)):
        with pytest.raises(AttributeError, match="not part of ForgeReader"):
            getattr(view, name)


def test_the_readers_typed_with_forge_reader_read_everything_through_it_alone(fake_forge, tmp_path):
    forge, fake = fake_forge
    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": target_yaml({"rule": "welch"})})
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h1", {"h1.txt": "x\n"}, start="advisor")
    pr = forge.create_pull("h1", "body", "senpai/ada/h1", "advisor", [SENPAI]).number
    spent = TurnUsage(llm_calls=1, tokens=10, dollars=0.01, wall_seconds=1.0)
    turn = TurnCost(pr=None, revision="c" * 40, key="advisor-prnone-cccccccccccc-1", status="finished", spent=spent)
    transitions.record_turn(forge, turn, [])
    human = fake.forge("alice", "owner")
    human.create_issue("steer", "/senpai pause", [STEER])
    human.create_comment(pr, "what about tanh?")

    view = ReaderOnly(forge)
    ledger = LedgerReader(view)  # type: ignore[arg-type]
    (exp,) = ledger.experiments()
    assert exp.pr == pr
    cfg: HarnessConfig = CFG.model_copy(update={"forge": CFG.forge.model_copy(update={"trusted": ["OWNER"]})})
    humans = HumanReader(cfg, view, ledger)  # type: ignore[arg-type]
    humans.poll()
    seen = humans.read()
    assert len(seen.state.advisor_turns) == 1 and len(seen.issues) == 2  # the turns' issue and the human's
    assert [m.message.body for m in seen.commands] == ["/senpai pause"] and [m.message.body for m in seen.free_text] == [
        "what about tanh?"
    ]
    assert read_writers(view, ["alice"]) == {"alice": True}  # type: ignore[arg-type]
    assert base_target(view, forge.branch_sha("advisor")) is not None  # senpai.yaml, through read_file


def test_the_dispatchers_label_restore_is_a_transition_that_writes_only_when_the_label_is_gone(fake_forge, tmp_path):
    forge, _ = fake_forge
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h1", {"h1.txt": "x\n"}, start="advisor")
    pr = forge.create_pull("h1", "body", "senpai/ada/h1", "advisor", [SENPAI])
    transitions.restore_student(forge, pr, "ada")
    restored = forge.get_pull(pr.number)
    assert student_label("ada") in restored.labels
    transitions.restore_student(forge, restored, "ada")  # already there: nothing written
    forge.close_with_labels(pr.number, [SENPAI])
    transitions.restore_student(forge, forge.get_pull(pr.number), "ada")  # closed: nothing written
    assert forge.recorded("set_labels") == [(pr.number, restored.labels)]
