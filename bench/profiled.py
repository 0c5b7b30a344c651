"""``nostr-browserd`` with cProfile switched on and off by signals, for the timed window only.

``python -m bench.profiled STATS_FILE run --config …``: SIGUSR1 starts profiling the event
loop's thread afresh, SIGUSR2 stops it and writes STATS_FILE, so start-up and warm-up are left
out (and each window is its own).
"""

from __future__ import annotations

import cProfile
import signal
import sys

from nostr_browserd.cli.main import main

if __name__ == "__main__":
    stats, args = sys.argv[1], sys.argv[2:]
    profile = cProfile.Profile()

    def start(*_: object) -> None:
        global profile
        profile = cProfile.Profile()
        profile.enable()

    def stop(*_: object) -> None:
        profile.disable()
        profile.dump_stats(stats)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    sys.exit(main(args))
