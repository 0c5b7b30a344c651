"""A publish's result: which relays have the event, and why the others do not."""

from nostr_browserd.nostr.relay.publish import PublishResult, RelayAck


def test_a_result_says_who_took_the_event_and_why_the_others_did_not() -> None:
    result = PublishResult(
        "ab" * 32,
        {
            "wss://a": RelayAck(True, ""),
            "wss://b": RelayAck(False, "blocked: not on the list"),
            "wss://c": RelayAck(False, "timeout: no OK within 10 s"),
        },
    )
    assert result.ok and result.accepted == ["wss://a"]
    assert result.refused == {
        "wss://b": "blocked: not on the list",
        "wss://c": "timeout: no OK within 10 s",
    }
    assert not PublishResult("ab" * 32, {"wss://b": RelayAck(False, "no")}).ok
