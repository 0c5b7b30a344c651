"""Video recordings of a session: record start, record stop, record status.

``record start`` records what a person watching the active tab would see, across navigations
and tab switches; each command that follows is a step, captioned in the video.  ``record
stop`` answers with the video (MP4, else WebM: :mod:`..browser.video`) as a result's file,
which a NIP-17 chat receives as a kind 15 file message, and with ``--sheet`` a contact sheet
of the steps beside it.  A recording is kept, like HAR and trace, under the owner's
``state_dir`` when one is set; it is only ever delivered to the session's own owner.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry
from .recording import RecordingName, deliver

TOOLS = Registry()


class RecordStartParams(Params):
    """How many frames a second, at most (default ``[record] fps``)."""

    fps: int | None = Field(None, ge=1, le=30, description="frames per second at most")


class RecordStopParams(RecordingName):
    """What to call the video, and whether a contact sheet of the steps comes with it."""

    sheet: bool = Field(False, description="also a picture of every step, one cell each")


@TOOLS.tool("record_start", family="recording", gated=False, params=RecordStartParams)
async def record_start(session: Session, params: RecordStartParams) -> dict[str, Any]:
    """Start a video of the active tab, following navigations and tab switches."""
    settings = session.config.record
    if params.fps is not None:
        settings = settings.model_copy(update={"fps": params.fps})
    recorder = await session.start_recording(settings)
    return {
        **recorder.status(),
        "note": f"Recording at up to {settings.fps} fps, for {settings.max_seconds:g} s at most:"
        " record stop ends it.",
    }


@TOOLS.tool("record_stop", family="recording", gated=False, params=RecordStopParams, args=("name",))
async def record_stop(session: Session, params: RecordStopParams) -> dict[str, Any]:
    """End the recording: the video (MP4 or WebM), its length and size; --sheet adds steps."""
    recording = await session.stream.stop_recording()
    return recording_result(session, recording, params.name, params.sheet)


def recording_result(
    session: Session, recording: Any, name: str | None, sheet: bool
) -> dict[str, Any]:
    """A stopped recording as a result: the video as its file, the sheet as a second one."""
    video = recording.video
    if video is None:
        return {"note": "Nothing was recorded: the page showed no frame.", "steps": 0}
    suffix = "mp4" if video.mime == "video/mp4" else "webm"
    name = name or f"recording-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"
    result = deliver(session, name, suffix, video.data)
    result.update(
        mime=video.mime,
        seconds=video.seconds,
        dim=f"{video.width}x{video.height}",
        frames=video.frames,
        steps=len(recording.steps),
        captions=[f"{n} · {text}" for n, text in enumerate(recording.steps, 1)],
    )
    if result.pop("stored"):
        result["kept"] = f"{result['name']}, among your recordings in the daemon's state directory"
    notes = [result.pop("note", None)]
    if recording.stopped_by is not None:
        key = recording.stopped_by
        bound = session.config.record.model_dump()[key]
        notes.append(f"The recording stopped at its limit ([record] {key} = {bound}).")
    if sheet and recording.sheet is not None:
        result["sheet"] = {
            "mime": "image/png",
            "bytes": len(recording.sheet),
            "name": f"{result['name'].rsplit('.', 1)[0]}-steps.png",
            "base64": base64.b64encode(recording.sheet).decode("ascii"),
        }
    result["note"] = " ".join(n for n in notes if n) or None
    if result["note"] is None:
        del result["note"]
    return result


@TOOLS.tool("record_status", family="recording", gated=False, params=NoParams)
async def record_status(session: Session, params: NoParams) -> dict[str, Any]:
    """Whether a recording is on, for how long, its frames and steps."""
    if session.stream.recorder is None:
        if session.stream.finishing is not None:
            return {"recording": False, "kept": True, "note": "record stop brings the last one."}
        return {"recording": False}
    return session.stream.recorder.status()
