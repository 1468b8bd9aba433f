"""The long tests start first on every xdist worker: `long_first` against xdist's own `worksteal` scheduler."""

from types import SimpleNamespace

import pytest
from long_first import long_first
from xdist.scheduler.worksteal import WorkStealingScheduling


class _Worker:
    """What the scheduler calls on a worker: it records the test indices it is sent."""

    def __init__(self, n: int):
        self.gateway = SimpleNamespace(id=f"gw{n}")
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices):
        self.sent += indices


def _first_sent(collection: list[str], workers: int) -> list[list[str]]:
    """What each worker is sent first, by xdist's `worksteal` scheduler itself."""
    sched = WorkStealingScheduling(SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"]))
    nodes = [_Worker(n) for n in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    return [[collection[i] for i in node.sent] for node in nodes]


@pytest.mark.parametrize("workers, count, long", [(4, 103, [7, 50, 98, 99, 100, 101]), (3, 10, [9]), (4, 40, [0, 1, 2, 3, 4])])
def test_each_worker_is_sent_its_long_tests_first_and_the_rest_keep_their_order(workers, count, long):
    names = [f"{'long' if n in long else 'test'}{n}" for n in range(count)]
    ordered = long_first(names, workers, lambda name: name.startswith("long"))
    assert sorted(ordered) == sorted(names)
    assert [n for n in ordered if n.startswith("test")] == [n for n in names if n.startswith("test")]
    slices = _first_sent(ordered, workers)
    assert sum(map(len, slices)) == count
    dealt = [[n for n in s if n.startswith("long")] for s in slices]
    for s, mine in zip(slices, dealt, strict=True):
        assert s[: len(mine)] == mine  # a worker runs its long tests before any other
    assert max(map(len, dealt)) - min(map(len, dealt)) <= 1  # dealt evenly


def test_one_worker_or_no_long_test_leaves_the_order_alone():
    names = [f"t{n}" for n in range(9)]
    assert long_first(names, 1, lambda n: n == "t8") == names
    assert long_first(names, 4, lambda n: False) == names


def test_the_reorder_runs_after_deselection(pytestconfig):
    """The conftest deals the long tests to the slices of the tests left after `-k`/`-m`: run before
    them, its slices are of the whole collection, and a long test lands anywhere in a worker's."""
    hook = pytestconfig.pluginmanager.hook.pytest_collection_modifyitems
    order = [impl.plugin_name for impl in reversed(hook.get_hookimpls())]  # pluggy calls the last one first
    ours = next(i for i, name in enumerate(order) if name.endswith("tests/conftest.py"))
    assert ours > order.index("mark") and ours > order.index("main")  # `-k`/`-m`, `--deselect`
