"""IdentityLink: the link follows whoever is logged in, one rebuild after another."""

import asyncio
from dataclasses import dataclass, field

from nostr_browserd.dm.link import IdentityLink
from nostr_browserd.dm.messages import Incoming


@dataclass
class Login:
    logged_in: bool = True
    readonly: bool = False
    signer: str = "first"


@dataclass
class FakeLink:
    signer: str
    steps: list[str]
    replies: list[str] = field(default_factory=list)

    async def start(self) -> None:
        await asyncio.sleep(0)  # a real link waits for its relays: others run meanwhile
        self.steps.append(f"up {self.signer}")

    async def close(self) -> None:
        await asyncio.sleep(0)
        self.steps.append(f"down {self.signer}")

    async def reply(self, to, text, request_id) -> bool:
        self.replies.append(text)
        return True


class Server:
    def __init__(self) -> None:
        self.replies: list[str] = []
        self.closed = False

    def submit(self, incoming) -> None:
        pass

    async def reply(self, to, text, request_id) -> bool:
        self.replies.append(text)
        return True

    def close(self) -> None:
        self.closed = True


def identity_link(login: Login, steps: list[str], server: Server | None = None) -> IdentityLink:
    async def carrier(signer):
        return server

    async def started(carrier, signer):
        steps.append(f"announced {signer}")

    return IdentityLink(
        login, lambda signer, readonly, carrier: FakeLink(signer, steps), carrier, started
    )


def message(scheme: str) -> Incoming:
    return Incoming("ab" * 32, scheme, "get url", "e" * 64, "e" * 64, 0)


async def test_a_switch_takes_the_old_link_down_before_the_next_comes_up():
    login, steps = Login(), []
    nostr = identity_link(login, steps)
    await nostr.start()

    async def between() -> None:
        steps.append("between")

    async def after() -> None:
        steps.append("after")

    for signer in ("second", "third"):  # two switches at once: one after the other
        login.signer = signer
        nostr.switch(between, after)
    await nostr.close()
    assert steps == [
        "up first",
        "down first",
        "between",
        "up third",
        "after",
        "down third",
        "between",
        "up third",
        "after",
        "down third",
    ]


async def test_logged_out_there_is_no_link_and_nothing_goes_out():
    nostr = identity_link(Login(logged_in=False), [])
    await nostr.start()
    assert nostr.link is None
    assert not await nostr.reply(message("nip17"), "hi", 1)
    assert not await nostr.send("ab" * 32, "hi", "nip17")


async def test_replies_go_back_by_the_carrier_they_came_by():
    steps, server = [], Server()
    nostr = identity_link(Login(), steps, server)
    await nostr.start()
    assert steps == ["up first", "announced first"]
    assert await nostr.reply(message("nip17"), "by dm", 1)
    assert await nostr.reply(message("contextvm"), "by mcp", 2)
    assert nostr.link.replies == ["by dm"] and server.replies == ["by mcp"]
    await nostr.close()
    assert server.closed and nostr.carrier is None and nostr.link is None
    assert not await asyncio.wait_for(nostr.reply(message("contextvm"), "late", 3), 5)
