"""End to end, recordings: record start, a few commands, record stop, and the video and its
contact sheet arrive in the chat as NIP-17 file messages that a decoder (PyAV) reads.

A real relay, a real Chromium, the test Blossom server and a controller on nostr-sdk; the
pages are plain colours, so which page a frame shows is read off its pixels.
"""

from __future__ import annotations

import asyncio
import base64
import io
from typing import Any

import av
from PIL import Image

from tests.e2e.test_ask import CODE, approval, message, start
from tests.e2e.test_phone import files_section, open_file, say
from tests.fixtures.blossom import blossom_server_fixture  # noqa: F401
from tests.fixtures.daemon import SdkController, daemon_pubkey, start_daemon_fixture  # noqa: F401
from tests.fixtures.fake_provider import call, fake_provider_fixture  # noqa: F401
from tests.fixtures.fake_provider import say as model_says

RED, BLUE = (255, 0, 0), (0, 0, 255)
FIELD_BOX = (40, 40, 440, 100)  # colour.html's input, in CSS pixels (the viewport is 1280 wide)


def colour_of(picture: Image.Image, box: tuple[int, int, int, int] | None = None) -> tuple:
    """The mean colour of ``picture`` (or of ``box`` in it), rounded."""
    region = picture.convert("RGB").crop(box) if box else picture.convert("RGB")
    small = region.resize((1, 1), Image.Resampling.BOX)
    return tuple(small.getpixel((0, 0)))


def near(colour: tuple, wanted: tuple, slack: int = 60) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(colour, wanted, strict=True))


def frames_of(video: bytes) -> list[Image.Image]:
    """Every frame of ``video``, decoded as a player would."""
    with av.open(io.BytesIO(video)) as container:
        return [frame.to_image() for frame in container.decode(video=0)]


def duration_of(video: bytes) -> float:
    with av.open(io.BytesIO(video)) as container:
        stream = container.streams.video[0]
        last = max(frame.pts for frame in container.decode(video=0))
        return float(last * stream.time_base)


async def ok(controller: SdkController, daemon: str, tool: str, **params: Any) -> dict[str, Any]:
    answer = await controller.command(daemon, {"tool": tool, "params": params})
    assert answer["success"], answer
    return answer["data"]


async def test_a_recording_arrives_as_a_video_and_a_sheet_of_its_steps(
    nostr_relay_url, site_url, start_daemon, blossom_server
):
    async with SdkController([nostr_relay_url]) as alice:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[alice.npub], files=files_section(blossom_server.url)
        )
        me = await daemon_pubkey(daemon)
        await say(alice, me, f"open {site_url}/colour.html?c=white")
        reply, _ = await say(alice, me, "record start")
        assert "Recording at up to 5 fps" in reply.content, reply.content
        await say(alice, me, f"open {site_url}/colour.html?c=red")
        await say(alice, me, f"open {site_url}/colour.html?c=blue")
        reply, files = await say(alice, me, "record stop --sheet")

        assert len(files) == 2, reply.content
        video, sheet = sorted(files, key=lambda f: f.tag("file-type") != "video/mp4")
        assert video.tag("file-type") == "video/mp4" and video.tag("name").endswith(".mp4")
        data = open_file(video)
        frames = frames_of(data)
        assert f"{frames[0].width}x{frames[0].height}" == video.tag("dim")
        assert near(colour_of(frames[-1]), BLUE), "the last frame shows the last page"
        assert any(near(colour_of(f), RED) for f in frames), "the red page was seen"
        assert "seconds:" in reply.content and "steps: 2" in reply.content, reply.content

        # The sheet: one cell per step, each the page that step left.
        assert sheet.tag("file-type") == "image/png"
        picture = Image.open(io.BytesIO(open_file(sheet)))
        cell = picture.width // 2
        assert near(colour_of(picture, (0, 0, cell, 100)), RED)
        assert near(colour_of(picture, (cell, 0, 2 * cell, 100)), BLUE)


async def test_a_paint_that_comes_while_the_ack_waits_is_recorded(
    nostr_relay_url, site_url, start_daemon
):
    """At 1 fps the blue page paints while Chrome waits for the red frame's ack: Chrome keeps
    that paint and sends it with the ack, so the page at rest is what the video ends on."""
    async with SdkController([nostr_relay_url]) as alice:
        daemon = await start_daemon([nostr_relay_url], controllers=[alice.npub])
        me = await daemon_pubkey(daemon)
        await ok(alice, me, "open", url=f"{site_url}/colour.html?c=white")
        await ok(alice, me, "record_start", fps=1)
        await ok(alice, me, "open", url=f"{site_url}/colour.html?c=red")
        await ok(alice, me, "open", url=f"{site_url}/colour.html?c=blue")
        await ok(alice, me, "wait", ms=1500)  # the next ack's turn comes
        stopped = await ok(alice, me, "record_stop")
        frames = frames_of(base64.b64decode(stopped["base64"]))
        assert near(colour_of(frames[-1]), BLUE), [colour_of(f) for f in frames]


async def test_a_secret_is_masked_in_every_frame(nostr_relay_url, site_url, start_daemon):
    async with SdkController([nostr_relay_url]) as alice:
        daemon = await start_daemon([nostr_relay_url], controllers=[alice.npub])
        me = await daemon_pubkey(daemon)
        shown = {}
        for secret in (False, True):
            await ok(alice, me, "open", url=f"{site_url}/colour.html?c=white")
            await ok(alice, me, "record_start")
            await ok(alice, me, "fill", selector="#field", value="WWWWWWWWWW", secret=secret)
            await ok(alice, me, "wait", ms=600)  # a few frames of the filled field
            stopped = await ok(alice, me, "record_stop")
            frames = frames_of(base64.b64decode(stopped["base64"]))
            scale = frames[0].width / 1280
            box = tuple(round(v * scale) for v in FIELD_BOX)
            shown[secret] = [colour_of(f, box) for f in frames]
        # In clear, the filled field is white with black letters; masked, a dark box throughout.
        assert any(c[0] > 150 for c in shown[False]), shown[False]
        assert all(c[0] < 80 for c in shown[True][-3:]), shown[True]


async def test_a_recording_stops_at_its_limit_and_says_so(nostr_relay_url, site_url, start_daemon):
    async with SdkController([nostr_relay_url]) as alice:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[alice.npub], record={"max_seconds": 1}
        )
        me = await daemon_pubkey(daemon)
        await ok(alice, me, "open", url=f"{site_url}/colour.html?c=red")
        await ok(alice, me, "record_start")
        async with asyncio.timeout(30):
            while (await ok(alice, me, "record_status"))["stopped_by"] is None:
                await ok(alice, me, "open", url=f"{site_url}/colour.html?c=blue")
        stopped = await ok(alice, me, "record_stop")
        assert "stopped at its limit ([record] max_seconds = 1.0)" in stopped["note"]
        assert duration_of(base64.b64decode(stopped["base64"])) <= 1.0


async def test_a_recording_is_its_owners_alone(nostr_relay_url, site_url, start_daemon):
    async with (
        SdkController([nostr_relay_url]) as alice,
        SdkController([nostr_relay_url]) as bob,
    ):
        daemon = await start_daemon([nostr_relay_url], controllers=[alice.npub, bob.npub])
        me = await daemon_pubkey(daemon)
        await ok(alice, me, "open", url=f"{site_url}/colour.html?c=red")
        await ok(alice, me, "record_start")
        await ok(bob, me, "open", url=f"{site_url}/colour.html?c=blue")
        refused = await bob.command(me, {"tool": "record_stop"})
        assert refused["error"]["code"] == "INVALID_PARAMS"
        assert "No recording is on" in refused["error"]["message"]
        assert (await ok(bob, me, "record_status"))["recording"] is False
        stopped = await ok(alice, me, "record_stop")
        frames = frames_of(base64.b64decode(stopped["base64"]))
        assert all(near(colour_of(f), RED) for f in frames), "only alice's own page"


async def test_without_blossom_the_reply_says_where_the_video_is(
    nostr_relay_url, site_url, start_daemon
):
    async with SdkController([nostr_relay_url]) as alice:
        daemon = await start_daemon([nostr_relay_url], controllers=[alice.npub])
        me = await daemon_pubkey(daemon)
        await say(alice, me, f"open {site_url}/colour.html?c=red")
        await say(alice, me, "record start")
        await say(alice, me, f"open {site_url}/colour.html?c=blue")
        reply, files = await say(alice, me, "record stop holiday")
        assert files == []
        assert "kept: holiday.mp4, among your recordings in the daemon's" in reply.content
        [kept] = daemon.state_dir.rglob("recordings/holiday.mp4")
        assert kept.parent.parent.name == alice.pubkey and kept.stat().st_mode & 0o077 == 0


async def test_ask_record_replays_the_turn_with_its_steps_and_approval(
    nostr_relay_url, site_url, fake_provider, start_daemon, blossom_server
):
    async with SdkController([nostr_relay_url]) as phone:
        _daemon, me = await start(
            start_daemon,
            nostr_relay_url,
            phone,
            fake_provider,
            controller={"ask": {"auto_approve": ["open"]}},
            files=files_section(blossom_server.url),
        )
        fake_provider.script = [
            call("open", "open the red page", url=f"{site_url}/colour.html?c=red"),
            call("click", "focus the field", selector="#field"),
            model_says("Clicked it."),
        ]
        before = len(phone.received)
        await phone.send(me, "ask --record click the field on the red page")
        asked = await approval(phone, me)
        await phone.send(me, f"approve {CODE.search(asked.content)[1]}")
        reply = await message(phone, lambda r: r.sender == me and "Clicked it." in r.content, 60)
        files = [r for r in phone.received[before:] if r.kind == 15]
        assert sorted(f.tag("file-type") for f in files) == ["image/png", "video/mp4"]
        video = next(f for f in files if f.tag("file-type") == "video/mp4")
        assert any(near(colour_of(f), RED) for f in frames_of(open_file(video)))
        captions = reply.content[reply.content.index("captions:") :]
        assert "1 · open http" in captions and "colour.html?c=red" in captions, captions
        assert "2 · approved by npub1" in captions and "3 · click #field" in captions, captions
