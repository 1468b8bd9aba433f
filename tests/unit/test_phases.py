"""`senpai.phases`: a job's time split into named phases, one `senpai-phases:` line in its log.

No timing is asserted: only which phases were recorded, how often, and that nesting does not
count a block twice (the phases never add up to more than the job's own time).
"""

import pytest

from senpai import phases


@pytest.fixture(autouse=True)
def _fresh():
    phases.start("test")
    yield
    phases.start("test")


def test_nested_phases_count_once():
    with phases.phase("outer"):
        with phases.phase("inner"):
            pass
        with phases.phase("inner"):
            pass
    rec = phases.report()
    assert rec["role"] == "test" and 0 <= rec["cpu_entered"] <= rec["cpu"]
    assert {k: v[2] for k, v in rec["phases"].items()} == {"outer": 1, "inner": 2}
    assert sum(wall for wall, _, _ in rec["phases"].values()) <= rec["left"] - rec["entered"] + 1e-3
    assert all(wall >= 0 and cpu >= 0 for wall, cpu, _ in rec["phases"].values())


def test_a_phase_that_raises_is_still_counted():
    with pytest.raises(ValueError), phases.phase("failing"):
        raise ValueError("boom")
    assert phases.report()["phases"]["failing"][2] == 1


def test_marks_keep_the_first_time():
    phases.mark("command")
    first = phases.report()["marks"]["command"]
    phases.mark("command")
    assert phases.report()["marks"]["command"] == first


class _Adapter:
    calls = 0

    def read_thing(self) -> str:
        return "read"

    def write_thing(self, value: int) -> int:
        self.calls += 1
        return value * 2


def test_timed_wraps_methods_and_passes_the_rest_through():
    adapter = _Adapter()
    timed = phases.timed(adapter, lambda m: "write" if m.startswith("write") else "read")
    assert timed.read_thing() == "read" and timed.write_thing(2) == 4 and timed.write_thing(3) == 6
    assert timed.calls == 2  # an attribute, not a method: read through
    timed.calls = 7
    assert adapter.calls == 7  # and written through
    assert {k: v[2] for k, v in phases.report()["phases"].items()} == {"read": 1, "write": 2}


def test_a_jobs_forge_calls_are_timed_as_writes_exactly_when_the_port_writes():
    from senpai.cli.job import _forge_phase
    from senpai.forge.read import ForgeReader
    from senpai.forge.write import ForgeWriter

    def methods(port: type) -> set[str]:
        return {name for name, value in vars(port).items() if not name.startswith("_") and callable(value)}

    assert {_forge_phase(m) for m in methods(ForgeWriter)} == {"forge write"}
    assert {_forge_phase(m) for m in methods(ForgeReader)} == {"forge read"}
    assert _forge_phase("ensure_labels") == "forge write" and _forge_phase("list_labels") == "forge read"
