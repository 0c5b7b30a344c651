"""End to end, the phone as a screen: files out as NIP-17 file messages (kind 15) on a Blossom
server, and files in from the chat, kept for ``upload``.

A real relay, a real Chromium, the test Blossom server (tests/fixtures/blossom.py, proven by
blossom-cli) and a controller on nostr-sdk.  The controller opens each file as a chat app
would: fetch the URL, check ``x``, decrypt with the tags' key and nonce, check ``ox``.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import io
import json
import re
import urllib.request
from typing import Any

import nostr_sdk as n
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from PIL import Image

from nostr_browserd.files import blossom
from nostr_browserd.files.outgoing import NIP04_NOTE
from nostr_browserd.files.sealed import file_tags, seal
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.blossom import BlossomServer, blossom_server_fixture  # noqa: F401
from tests.fixtures.daemon import (
    Reply,
    SdkController,
    daemon_pubkey,
    seen,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.paths import TESTS
from tests.fixtures.relays import free_port


async def say(
    controller: SdkController, daemon: str, text: str, *, nip04: bool = False
) -> tuple[Reply, list[Reply]]:
    """Send ``text``; its text reply and the file messages that came before it."""
    before = len(controller.received)
    await controller.send(daemon, text, nip04=nip04)
    reply = await controller.wait_reply(lambda r: r.sender == daemon and r.kind in (4, 14))
    return reply, [r for r in controller.received[before:] if r.kind == 15]


def open_file(message: Reply) -> bytes:
    """What a chat app does with a kind 15: fetch, check x, decrypt, check ox."""
    with urllib.request.urlopen(message.content, timeout=10) as response:
        blob = response.read()
    assert hashlib.sha256(blob).hexdigest() == message.tag("x")
    assert message.tag("encryption-algorithm") == "aes-gcm"
    key, nonce = message.tag("decryption-key"), message.tag("decryption-nonce")
    assert len(key) == 64 and len(nonce) == 32, "32-byte key, 16-byte nonce (as Amethyst)"
    data = AESGCM(bytes.fromhex(key)).decrypt(bytes.fromhex(nonce), blob, None)
    assert hashlib.sha256(data).hexdigest() == message.tag("ox")
    assert message.tag("size") == str(len(data))
    return data


async def wait_for_event(controller: SdkController, wanted: n.Filter) -> list[list[str]]:
    """The tags of the first event matching ``wanted`` on the relays (a bounded wait)."""
    async with asyncio.timeout(20):
        while True:
            events = await controller.client.fetch_events(
                n.ReqTarget.auto([wanted]), timeout=datetime.timedelta(seconds=2)
            )
            for event in events.to_vec() if hasattr(events, "to_vec") else events:
                return [t.to_vec() for t in event.tags()]


def files_section(*servers: str, **more: Any) -> dict[str, Any]:
    return {"blossom_servers": list(servers), **more}


async def serving(start_daemon: Any, relay: str, controller: SdkController, *servers: str) -> str:
    """The pubkey of a daemon that allows ``controller`` and puts files on ``servers``."""
    daemon = await start_daemon(
        [relay], controllers=[controller.npub], files=files_section(*servers)
    )
    return await daemon_pubkey(daemon)


async def test_a_screenshot_arrives_as_a_file_message_before_its_reply(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    async with SdkController([nostr_relay_url]) as alice:
        me = await serving(start_daemon, nostr_relay_url, alice, blossom_server.url)
        await say(alice, me, f"open {site_url}/index.html")
        reply, files = await say(alice, me, "screenshot")

        assert len(files) == 1, reply.content
        message = files[0]
        assert message.content == f"{blossom_server.url}/{message.tag('x')}"
        assert message.tag("file-type") == "image/png"
        assert message.tag("e") == reply.tag("e"), "both cite the request"
        assert message.tag("p") == alice.pubkey
        picture = Image.open(io.BytesIO(open_file(message)))
        assert message.tag("dim") == f"{picture.width}x{picture.height}"
        assert "sent as a file message" in reply.content
        # all of the reply: the tab's line is left out, the open said where the tab is
        assert re.fullmatch(r"file: png, \d+ KB: sent as a file message", reply.content)

        # The daemon names its Blossom server (BUD-03) with its other announcements.
        listed = n.Filter().kind(n.Kind(10063)).author(n.PublicKey.parse(me))
        servers = await wait_for_event(alice, listed)
        assert ["server", blossom_server.url] in servers

        # A JSON request keeps its base64, and no file message comes with it.
        answer = await alice.command(me, {"tool": "screenshot"})
        assert answer["data"]["mime"] == "image/png" and answer["data"]["base64"]
        assert not [r for r in alice.received if r.kind == 15 and r is not message]


async def test_annotated_screenshots_pdfs_and_downloads_arrive_as_files(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    async with SdkController([nostr_relay_url]) as alice:
        me = await serving(start_daemon, nostr_relay_url, alice, blossom_server.url)
        await say(alice, me, f"open {site_url}/form.html")

        reply, [annotated] = await say(alice, me, "screenshot_annotated")
        assert annotated.tag("file-type") == "image/png" and annotated.tag("dim")
        assert "@e1" in reply.content, "the legend stays in the text reply"
        assert open_file(annotated).startswith(b"\x89PNG")

        reply, [pdf] = await say(alice, me, "pdf")
        assert pdf.tag("file-type") == "application/pdf" and pdf.tag("dim") is None
        assert open_file(pdf).startswith(b"%PDF")

        reply, [download] = await say(alice, me, f"download --url {site_url}/download.txt")
        assert download.tag("file-type") == "text/plain"
        assert download.tag("name") == "download.txt"
        assert open_file(download) == (TESTS / "site" / "download.txt").read_bytes()
        assert "name: download.txt" in reply.content

        await say(alice, me, "har start")
        await say(alice, me, f"open {site_url}/index.html")
        reply, [har] = await say(alice, me, "har stop")
        assert har.tag("name").endswith(".har") and har.tag("name") in reply.content
        assert json.loads(open_file(har))["log"]["entries"]


async def test_a_server_down_is_skipped_and_when_none_takes_it_only_the_file_is_lost(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    down = f"http://127.0.0.1:{free_port()}"
    async with SdkController([nostr_relay_url]) as alice:
        me = await serving(start_daemon, nostr_relay_url, alice, down, blossom_server.url)
        await say(alice, me, f"open {site_url}/index.html")
        reply, [message] = await say(alice, me, "screenshot")
        assert message.content.startswith(blossom_server.url)
        assert open_file(message).startswith(b"\x89PNG")

        blossom_server.refusing = (507, "storage full")
        reply, files = await say(alice, me, "screenshot h1")  # another text: another rumor id
        assert files == []
        assert "not sent: no Blossom server took it" in reply.content
        assert f"{down} answered unreachable" in reply.content
        assert f"{blossom_server.url} answered HTTP 507 storage full" in reply.content
        assert reply.content.endswith('{"tool": "screenshot", "params": {"selector": "h1"}}')


async def test_a_hanging_server_does_not_hold_the_reply_and_the_file_or_its_failure_follows(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    async with SdkController([nostr_relay_url]) as alice:
        me = await serving(start_daemon, nostr_relay_url, alice, blossom_server.url)
        await say(alice, me, f"open {site_url}/index.html")

        blossom_server.hold()  # accepts the upload, answers nothing until released
        reply, files = await say(alice, me, "screenshot")
        assert blossom_server.held == 1, "the reply came while the upload was still held"
        assert files == [] and "png" in reply.content
        assert re.fullmatch(
            r"file: png, \d+ KB: still uploading; it follows as a file message", reply.content
        )
        blossom_server.release()
        message = await alice.wait_reply(lambda r: r.sender == me and r.kind == 15)
        assert message.tag("e") == reply.tag("e"), "the late file cites the request"
        assert open_file(message).startswith(b"\x89PNG")

        blossom_server.hold()
        reply, files = await say(alice, me, "screenshot h1")
        assert blossom_server.held == 2 and files == []
        assert "it follows as a file message" in reply.content
        blossom_server.refusing = (507, "storage full")
        blossom_server.release()
        failure = await alice.wait_reply(lambda r: r.sender == me and r.kind == 14)
        assert failure.tag("e") == reply.tag("e")
        assert failure.content.startswith("The file of screenshot (png, ")
        assert f"{blossom_server.url} answered HTTP 507 storage full" in failure.content
        assert '{"tool": "screenshot", "params": {"selector": "h1"}}' in failure.content
        assert not [r for r in alice.received if r.kind == 15 and r is not message]


async def test_a_nip04_controller_is_told_files_come_over_nip17(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    async with SdkController([nostr_relay_url]) as bob:
        me = await serving(start_daemon, nostr_relay_url, bob, blossom_server.url)
        await say(bob, me, f"open {site_url}/index.html", nip04=True)
        reply, files = await say(bob, me, "screenshot", nip04=True)
        assert reply.scheme == "nip04" and files == []
        assert "ask in JSON for the data" in reply.content and NIP04_NOTE in reply.content
        assert blossom_server.blobs == {}


async def test_blobs_are_deleted_when_due_even_after_a_restart(
    nostr_relay_url, site_url, start_daemon, blossom_server, tmp_path
):
    state = tmp_path / "state"
    async with SdkController([nostr_relay_url]) as alice:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[alice.npub],
            state_dir=state,
            files=files_section(blossom_server.url, keep=3600),
        )
        me = await daemon_pubkey(daemon)
        await say(alice, me, f"open {site_url}/index.html")
        _, [message] = await say(alice, me, "screenshot")
        x = message.tag("x")
        assert x in blossom_server.blobs
        kept = await daemon.store.due_blobs(float("inf"))
        assert kept == [(blossom_server.url, x)]
        assert await daemon.store.due_blobs(0) == [], "not due for an hour"
        await daemon.stop()
        assert x in blossom_server.blobs

        # An hour later (the row says so), a new start deletes it (BUD-12) and forgets it.
        later = await start_daemon(
            [nostr_relay_url],
            controllers=[alice.npub],
            state_dir=state,
            files=files_section(blossom_server.url),
        )
        await later.store.keep_blob(blossom_server.url, x, 0)
        assert later.dispatcher is not None and later.dispatcher.files_out is not None
        await later.dispatcher.files_out.delete_due()
        assert blossom_server.deleted == [x]
        delete = blossom_server.auths[-1]
        assert ["t", "delete"] in delete["tags"] and ["x", x] in delete["tags"]
        assert await later.store.next_blob_due() is None


async def send_file(controller: SdkController, daemon: str, url: str, tags: list[list[str]]) -> str:
    """A kind 15 built and gift-wrapped by nostr-sdk, as a chat app sends one."""
    rumor = (
        n.EventBuilder(n.Kind(15), url)
        .tags([n.Tag.parse(t) for t in [["p", daemon], *tags]])
        .finalize_unsigned(controller.keys.public_key())
    )
    wrap = n.nip59_make_gift_wrap(controller.keys, n.PublicKey.parse(daemon), rumor)
    return await controller.publish(wrap)


async def put_file(
    server: BlossomServer, data: bytes, mime: str, **changed: str
) -> tuple[str, list]:
    """Upload ``data`` as a phone would (sealed, by a key of its own): its URL and kind 15
    tags, with ``changed`` tags replaced (to break them)."""
    sealed = seal(data)
    phone = KeySigner.generate()
    auth = await blossom.authorization(phone, "upload", sealed.x, "a photo", server.url)
    url = await blossom.upload(server.url, sealed.blob, sealed.x, auth)
    tags = [[k, changed.get(k.replace("-", "_"), v)] for k, v in file_tags(sealed, mime, None)]
    return url, tags


async def test_a_file_sent_from_the_chat_is_kept_for_upload(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    photo = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
    async with SdkController([nostr_relay_url]) as alice:
        daemon = await start_daemon([nostr_relay_url], controllers=[alice.npub])
        me = await daemon_pubkey(daemon)
        url, tags = await put_file(blossom_server, photo, "image/png")
        await send_file(alice, me, url, [*tags, ["name", "../Ada's photo.jpeg"]])
        reply = await alice.wait_reply(lambda r: r.sender == me)
        assert "received: Ada_s_photo.png" in reply.content, reply.content
        assert "use: upload <target> Ada_s_photo.png" in reply.content
        kept = daemon.config.browser.uploads_dir / alice.pubkey / "Ada_s_photo.png"
        assert kept.read_bytes() == photo and kept.stat().st_mode & 0o777 == 0o600

        await say(alice, me, f"open {site_url}/form.html")
        reply, _ = await say(alice, me, "upload #file Ada_s_photo.png")
        assert "ok: yes" in reply.content and "Ada_s_photo.png" in reply.content

        # Without a name, one is made from the file's hash.
        url, tags = await put_file(blossom_server, b"%PDF-1.4 a form", "application/pdf")
        await send_file(alice, me, url, tags)
        reply = await alice.wait_reply(lambda r: r.sender == me)
        ox = dict(tags)["ox"]
        assert f"received: file-{ox[:16]}.pdf" in reply.content


BAD_FILES = {
    "x": ({"x": "0" * 64}, "does not match the message's x hash"),
    "ox": ({"ox": "0" * 64}, "does not match the message's ox hash"),
    "key": ({"decryption_key": "11" * 32}, "does not decrypt with the message's key"),
    "nonce": ({"decryption_nonce": "ab"}, "decryption-nonce is not 8 to 32 bytes"),
}


async def test_bad_files_are_refused_and_nothing_is_kept(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    async with (
        SdkController([nostr_relay_url]) as alice,
        SdkController([nostr_relay_url]) as stranger,
    ):
        host = blossom_server.url.removeprefix("http://")
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[alice.npub],
            # The policy on, as for any DM controller: only the Blossom server is let through.
            browser={"block_private_networks": None, "allowed_hosts": [host]},
            files={"max_mb": 0.01},
        )
        me = await daemon_pubkey(daemon)
        folder = daemon.config.browser.uploads_dir / alice.pubkey

        async def refused(url: str, tags: list) -> str:
            await send_file(alice, me, url, tags)
            reply = await alice.wait_reply(lambda r: r.sender == me)
            assert not folder.exists() or list(folder.iterdir()) == [], reply.content
            return reply.content

        for name, (changed, why) in BAD_FILES.items():
            url, tags = await put_file(blossom_server, b"a small file", "text/plain", **changed)
            answer = await refused(url, tags)
            assert answer.startswith("✗ REFUSED") and why in answer, name
            assert "Nothing was kept" in answer

        url, tags = await put_file(blossom_server, b"big" * 5000, "text/plain")
        assert "over 0.01 MB ([files] max_mb)" in await refused(url, tags)

        gone = f"{blossom_server.url}/{'e' * 64}"
        assert "HTTP 404" in await refused(gone, tags)

        # Another loopback server is a private address: the download goes through the policy.
        url, tags = await put_file(blossom_server, b"a small file", "text/plain")
        elsewhere = f"{site_url}/{dict(tags)['x']}"
        answer = await refused(elsewhere, tags)
        assert answer.startswith("✗ FORBIDDEN") and "block_private_networks" in answer

        # A stranger's file message is never fetched: its seal is not even opened.
        fetched = len(blossom_server.fetched)
        wrap = await send_file(stranger, me, url, tags)
        await wait_until(lambda: seen(daemon.store, wrap))
        assert len(blossom_server.fetched) == fetched
        assert await daemon.store.known([wrap]) == {wrap}
        assert [r for r in await stranger.poll() if r.sender == me] == [], "nor answered"


LEGEND_LINE = re.compile(r"- n: (\d+), ref: @\w+, role: (\w+), name: (.*)")


def label(reply: Reply, role: str, name: str) -> str:
    """The number the reply's legend gives the element ``role`` named ``name``."""
    for number, found_role, found_name in LEGEND_LINE.findall(reply.content):
        if (found_role, found_name.strip()) == (role, name):
            return number
    raise AssertionError(f"no {role} {name!r} in the legend:\n{reply.content}")


async def test_watch_screen_sends_the_page_and_its_numbers_drive_it(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    async with SdkController([nostr_relay_url]) as alice:
        me = await serving(start_daemon, nostr_relay_url, alice, blossom_server.url)
        reply, files = await say(alice, me, "watch screen")
        assert "watching: screen" in reply.content and files == [], "watch changes no page"

        reply, [picture] = await say(alice, me, f"open {site_url}/form.html")
        assert picture.tag("file-type") == "image/png" and picture.tag("dim")
        assert picture.tag("e") == reply.tag("e")
        assert open_file(picture).startswith(b"\x89PNG")
        assert "screen: png" in reply.content and "sent as a file message" in reply.content

        reply, [_] = await say(alice, me, f'fill {label(reply, "textbox", "Name")} "Ada"')
        reply, [_] = await say(alice, me, f"click {label(reply, 'button', 'Send')}")
        reply, files = await say(alice, me, "get text #out")
        assert "sent Ada" in reply.content and files == [], "reading changes nothing"

        # Once the page has changed, a number from an older picture is refused.
        await say(alice, me, "watch off")
        reply, files = await say(alice, me, f"open {site_url}/index.html")
        assert files == [] and "legend" not in reply.content
        # (Not "click 1", the command below: the same text in the same second is one rumor id.)
        reply, _ = await say(alice, me, "click 2")
        assert reply.content.startswith("✗ STALE_REF: The page changed since the annotated")

        # agent-browser's spelling takes a new picture, and its numbers count.
        picture, [_] = await say(alice, me, "screenshot --annotate")
        reply, _ = await say(alice, me, "click 99")
        assert "has no label 99" in reply.content
        reply, _ = await say(alice, me, f"click {label(picture, 'link', 'Form')}")
        assert "Form" in reply.content and "✗" not in reply.content
