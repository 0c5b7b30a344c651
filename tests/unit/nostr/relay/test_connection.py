"""One relay's connections: what is pure of them (the reconnect delays)."""

from nostr_browserd.nostr.relay.connection import backoff_delay


def test_backoff_grows_to_the_cap_with_jitter() -> None:
    delays = [[backoff_delay(attempt, 0.5, 30.0) for _ in range(50)] for attempt in range(12)]
    assert all(0.25 <= d <= 0.5 for d in delays[0])
    assert all(15.0 <= d <= 30.0 for d in delays[-1])
    assert len(set(delays[-1])) > 1  # jitter: not everyone retries at the same moment
    assert backoff_delay(10_000, 0.5, 30.0) <= 30.0
