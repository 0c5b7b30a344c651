"""A recording's video: the live view's JPEG frames, encoded as they arrive.

PyAV (FFmpeg inside its wheel, pinned by uv.lock) was measured against Debian's ffmpeg
binary on the same 60 frames of 1280×720 page pictures: 0.78–1.06 s of CPU against
0.68–0.74 s, the files within 10% of each other (docs/benchmarks.md).  PyAV wins on what the
numbers do not show: no program to install beside the package, frames handed over one at a
time as the page paints (nothing kept in memory but the encoder's own), and a clean error
instead of a pipe to watch.  H.264 in MP4 plays inline in every chat app that shows video;
where an FFmpeg build has no H.264 encoder, VP9 in WebM.

The screencast sends a frame only when the page paints, so the video's clock is the wall
clock: each frame's time is when it came (milliseconds since the start), and the last
picture is held until the recording stops.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from fractions import Fraction

import av
from PIL import Image

from .frames import Caption, Frame, caption_bar

TIME_BASE = Fraction(1, 1000)  # frame times in milliseconds
CODECS = (("libx264", "mp4", "video/mp4"), ("libvpx-vp9", "webm", "video/webm"))
OPTIONS: dict[str, dict[str, object]] = {
    "libx264": {"preset": "veryfast", "crf": "28", "tune": "stillimage"},
    "libvpx-vp9": {"deadline": "realtime", "cpu-used": "8", "crf": "40", "b": "0"},
}


def _codec() -> tuple[str, str, str]:
    """The first of ``CODECS`` this FFmpeg build can encode."""
    for codec in CODECS:
        try:
            av.codec.Codec(codec[0], "w")
        except av.codec.codec.UnknownCodecError:
            continue
        return codec
    raise RuntimeError("this FFmpeg build encodes neither H.264 nor VP9")


@dataclass(frozen=True)
class Video:
    """An encoded recording and what a chat client shows of it."""

    data: bytes
    mime: str
    width: int
    height: int
    seconds: float
    frames: int


class VideoEncoder:
    """Frames in, one video out; every method blocks (run it off the event loop)."""

    def __init__(self, width: int, height: int) -> None:
        # Even dimensions: yuv420p halves both.
        self.width, self.height = width - width % 2, height - height % 2
        name, container, self.mime = _codec()
        self._out = io.BytesIO()
        self._container = av.open(self._out, "w", format=container)
        stream = self._container.add_stream(name, rate=30)
        assert isinstance(stream, av.VideoStream)
        self._stream: av.VideoStream = stream
        self._stream.width, self._stream.height = self.width, self.height
        self._stream.pix_fmt = "yuv420p"
        self._stream.time_base = TIME_BASE
        self._stream.codec_context.time_base = TIME_BASE
        self._stream.options = OPTIONS[name]
        self._last: tuple[Image.Image, int] | None = None
        self.frames = 0

    @property
    def size(self) -> int:
        """Bytes of video written so far."""
        with self._out.getbuffer() as view:  # released at once: the muxer may grow the buffer
            return view.nbytes

    def add(self, frame: Frame, caption: Caption | None = None) -> None:
        """Encode one picture shown from ``frame.at_ms`` on, captioned when given."""
        if self._last is not None and frame.at_ms <= self._last[1]:
            return  # two frames in one millisecond: the first stands
        picture = frame.image()
        if picture.size != (self.width, self.height):
            picture = picture.resize((self.width, self.height))
        if caption is not None:
            picture = caption_bar(picture, caption.text)
        self._encode(picture, frame.at_ms)
        self._last = (picture, frame.at_ms)

    def _encode(self, picture: Image.Image, at_ms: int) -> None:
        video_frame = av.VideoFrame.from_image(picture)  # type: ignore[no-untyped-call]  # PyAV leaves it untyped
        video_frame.pts = at_ms
        video_frame.time_base = TIME_BASE
        for packet in self._stream.encode(video_frame):
            self._container.mux(packet)
        self.frames += 1

    def finish(self, at_ms: int) -> Video:
        """Hold the last picture until ``at_ms``, flush, and return the whole video."""
        if self._last is not None and at_ms > self._last[1]:
            self._encode(self._last[0], at_ms)
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()
        seconds = at_ms / 1000 if self._last is not None else 0.0
        data = self._out.getvalue()
        return Video(data, self.mime, self.width, self.height, round(seconds, 2), self.frames)

    def abandon(self) -> None:
        """Drop what was encoded (a recording that failed or was refused)."""
        with contextlib.suppress(av.error.FFmpegError, ValueError):
            self._container.close()
        self._out = io.BytesIO()
