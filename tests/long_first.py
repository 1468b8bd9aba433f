"""Start the long tests first under pytest-xdist's `worksteal`, so none of them is left to run alone at the end.

`worksteal` hands worker k the k-th of n contiguous slices of the collection (equal counts, as
`WorkStealingScheduling.check_schedule` splits it), and an idle worker steals from the *end* of another's
queue. A long test late in a slice therefore starts late, and the run ends waiting for it while the other
workers sit idle (the profile of the whole suite showed ~70 s of such a tail). So the tests marked
`long` are dealt round-robin to the heads of the slices; the other tests keep their order.
"""

from collections.abc import Callable, Sequence

import pytest


def long_first[T](items: Sequence[T], workers: int, is_long: Callable[[T], bool]) -> list[T]:
    """`items` reordered so that each of the `workers` slices `worksteal` hands out begins with its share
    of the long items (dealt round-robin in collection order). Same items, same relative order otherwise.
    With fewer than 2 workers, or no long item, `items` as they are."""
    long = [i for i in items if is_long(i)]
    if workers < 2 or not long:
        return list(items)
    rest = iter([i for i in items if not is_long(i)])
    heads: list[list[T]] = [long[k::workers] for k in range(workers)]
    out: list[T] = []
    for k in range(workers):
        size = (len(items) - len(out)) // (workers - k)  # the slice xdist sends the k-th idle worker
        out += heads[k]
        out += [next(rest) for _ in range(max(0, size - len(heads[k])))]
    out += list(rest)
    return out


# The hooks, as a plugin: tests/conftest.py imports them (`-p long_first` loads them alone). Only the
# controller knows the distribution mode (xdist sets each worker's `dist` to "no"), so it hands it to
# the workers, which collect and order the tests.


@pytest.hookimpl(optionalhook=True)  # an xdist hook: absent with `-p no:xdist`
def pytest_configure_node(node):
    """Controller side: tell each worker how the tests are distributed."""
    node.workerinput["long_first_dist"] = node.config.getoption("dist")


@pytest.hookimpl(trylast=True)  # after `-k`/`-m` deselect: the slices are of the tests that run
def pytest_collection_modifyitems(config, items):
    """Worker side, under `-n N --dist worksteal`: each worker's slice starts with its share of the
    `long` tests. Elsewhere (no xdist, another mode, the controller) the order is left alone."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput and workerinput.get("long_first_dist") == "worksteal":
        items[:] = long_first(items, int(workerinput["workercount"]), lambda item: item.get_closest_marker("long") is not None)
