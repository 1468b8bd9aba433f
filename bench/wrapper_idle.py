"""The wrapper's side of the idle figure (bench/forge_requests.py), in a process of its own.

`python bench/wrapper_idle.py CONFIG TICKS` builds the wrapper of harness config CONFIG (as
`senpai wrapper run` does) and runs its observe step (`Wrapper._observe`, what a tick asks the
forge): the first full read, TICKS idle ticks, then one periodic full refresh. It prints one JSON
line: each step's REST requests (charged, and 304s apart, as the forge adapter counted them) and
seconds, and the process's peak RSS (VmHWM) over all of it. It imports only what the wrapper
does, so that peak is the wrapper's.
"""

import json
import sys
import time

from forge_seed import peak_rss_mib  # this folder: the script's own


def _step(w, fn) -> dict:
    calls, free, start = w.forge.calls, w.forge.not_modified, time.perf_counter()
    fn()
    free = w.forge.not_modified - free
    return {"charged": w.forge.calls - calls - free, "not_modified": free, "seconds": round(time.perf_counter() - start, 3)}


def main(config: str, ticks: int) -> dict:
    from senpai.cli.wrapper import build_wrapper

    w = build_wrapper(config)
    try:
        first = _step(w, lambda: w._observe(False))
        idle = [_step(w, lambda: w._observe(False)) for _ in range(ticks)]
        w._last_refresh = float("-inf")  # the periodic full refresh is due
        refresh = _step(w, lambda: w._observe(False))
        experiments = len(w._exps or [])
    finally:
        w.store.close()
    return {"first": first, "idle": idle, "refresh": refresh, "experiments": experiments, "peak_rss_mib": peak_rss_mib()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
