"""Delivery: a reply goes back in the scheme its message came in."""

from nostr_browserd.errors import BrowserdError


async def test_a_refused_kind_4_does_not_switch_the_reply_scheme(tmp_path):
    from nostr_browserd.browser.pool import BrowserPool
    from nostr_browserd.daemon.config import ControllerConfig
    from nostr_browserd.dm.messages import Incoming
    from nostr_browserd.errors import ErrorCode
    from tests.fixtures.browser import local_dispatcher

    pk = "ab" * 32
    replies = []

    async def reply(incoming, text, request_id):
        replies.append((incoming.scheme, text))
        return True

    pool = BrowserPool()  # never started: a refusal runs nothing
    dispatcher = local_dispatcher(pool, tmp_path, reply, {pk: ControllerConfig(pubkey=pk)})
    stale = Incoming(pk, "nip04", "get url", "e" * 64, "e" * 64, 0)
    dispatcher.submit(
        Incoming(**{**stale.__dict__, "refusal": BrowserdError(ErrorCode.REFUSED, "stale")})
    )
    await dispatcher.close()  # answers what it was given, then stops
    assert replies and replies[0][0] == "nip04", "the refusal itself goes back in its own scheme"
    assert dispatcher.delivery.scheme_of(pk) == "nip17", (
        "but later replies keep the controller's scheme"
    )
    await dispatcher.store.close()
