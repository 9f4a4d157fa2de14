"""The footprint benchmark's own figures: the wake-up floor it prints beside the idle daemon's CPU."""

from __future__ import annotations

import threading
import time

from device.bench.footprint import wakeup_floor_percent


def test_the_wake_up_floor_grows_with_the_rate_and_counts_only_its_thread() -> None:
    """Ten times the wake-ups cost more; a busy thread beside it is not counted (thread CPU time)."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            time.sleep(0)  # keep a core busy while letting the measuring thread in

    busy = threading.Thread(target=spin, daemon=True)
    busy.start()
    try:
        fast = wakeup_floor_percent(hz=500.0, seconds=1.0)
        slow = wakeup_floor_percent(hz=5.0, seconds=1.0)
    finally:
        stop.set()
        busy.join()
    assert 0.0 < fast < 60.0  # a thread that sleeps between wake-ups, not the spinning neighbour
    assert slow < fast
