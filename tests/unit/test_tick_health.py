"""TickHealth: the liveness window and readiness rules, with an injected clock (no sleeping)."""

import threading

from senpai.wrapper.health import TickHealth


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_liveness_window_is_three_ticks_but_at_least_a_minute() -> None:
    assert TickHealth(5, Clock()).window == 60
    assert TickHealth(30, Clock()).window == 90


def test_first_tick_is_live_but_not_ready() -> None:
    clock = Clock()
    h = TickHealth(5, clock)
    assert h.live() == (True, "starting") and not h.ready()[0]
    h.tick_started()
    clock.now += 600  # a slow first tick (cold clone, big ledger) is not a reason to restart
    assert h.live() == (True, "first tick")
    assert h.ready() == (False, "no tick finished yet")
    assert h.snapshot()["in_tick"] is True


def test_a_stuck_loop_fails_liveness() -> None:
    clock = Clock()
    h = TickHealth(5, clock)
    h.tick_started()
    h.tick_finished()
    assert h.live() == (True, "ok") and h.ready() == (True, "ok")
    h.tick_started()
    clock.now += 61
    alive, reason = h.live()
    assert not alive and "limit 60 s" in reason


def test_a_chosen_wait_extends_the_window() -> None:
    clock = Clock()
    h = TickHealth(5, clock)
    h.tick_started()
    h.tick_finished("rate limited")
    h.waiting(600)  # e.g. the rate-limit reset
    clock.now += 620
    assert h.live()[0]
    clock.now += 60
    assert not h.live()[0]


def test_readiness_follows_the_last_tick() -> None:
    h = TickHealth(5, Clock())
    for error in ("forge down", "forge down"):
        h.tick_started()
        h.tick_finished(error)
    assert h.ready() == (False, "last tick failed: forge down")
    assert h.snapshot()["consecutive_failures"] == 2 and h.snapshot()["last_success"] is None
    h.tick_started()
    h.tick_finished(action_errors=2)  # a refused Job is the action's failure, not the loop's
    assert h.ready()[0] and h.snapshot()["consecutive_failures"] == 0 and h.snapshot()["last_success"]
    assert h.snapshot()["action_errors"] == 2


def test_an_exited_loop_thread_fails_liveness() -> None:
    h = TickHealth(5, Clock())
    t = threading.Thread(target=h.tick_started)
    t.start()
    t.join()
    assert h.live() == (False, "the loop thread has exited")
