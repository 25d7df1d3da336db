"""Video probing and frame sampling (protocol.md section 2).

Frames are taken at 1 FPS; a video longer than ``cap`` seconds gives ``cap`` frames spread
evenly over its whole length. The per-model image budget decides the cap:
``frames = min(frame_cap, image_budget - number_of_sheets)``.

The official generator samples differently (protocol.md section 6); :func:`official_frame_indices`
and :func:`sample_frames_official` reproduce it for ``--protocol official``.

Decoding runs in the calling thread; async callers wrap it in ``anyio.to_thread.run_sync``.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import av
import av.error
import cv2
import numpy as np
from av.container import InputContainer
from PIL import Image
from pydantic import BaseModel

from iwr_bench.errors import IwrError
from iwr_bench.metrics.hashing import phash_hex, pixel_digest

DEFAULT_FPS = 1.0
DEFAULT_FRAME_CAP = 64
DEFAULT_IMAGE_BUDGET = 70
OFFICIAL_JPEG_QUALITY = 95
"""cv2's JPEG quality, the one the official generator writes its frames with."""


class VideoError(IwrError):
    """The video is missing, cannot be decoded, or has no video stream."""


class VideoInfo(BaseModel):
    """What a video file holds."""

    width: int
    """Frame width in pixels."""
    height: int
    """Frame height in pixels."""
    duration: float
    """Length in seconds."""
    frame_count: int
    """Number of frames (counted when the container does not say)."""
    codec: str
    """Codec name, e.g. ``h264``."""
    average_fps: float
    """Mean frame rate."""


class ImagePlan(BaseModel):
    """How many sheets and frames one generation request carries."""

    sheets: int
    """Contact sheets included (the first ones, in filename order)."""
    frames: int
    """Video frames included."""


def plan_images(
    n_sheets: int, image_budget: int = DEFAULT_IMAGE_BUDGET, frame_cap: int = DEFAULT_FRAME_CAP
) -> ImagePlan:
    """Split an image budget between asset sheets (first) and frames.

    When the sheets alone exceed the budget, only the first ``image_budget`` sheets are sent
    and no frames; callers should warn, since the model then never sees the video.
    """
    if image_budget < 0 or frame_cap < 0:
        raise ValueError("image budget and frame cap must not be negative")
    sheets = min(n_sheets, image_budget)
    return ImagePlan(sheets=sheets, frames=max(0, min(frame_cap, image_budget - sheets)))


def probe_video(path: Path) -> VideoInfo:
    """Open a video and read its basic properties, decoding one frame to prove it is readable.

    Raises:
        VideoError: when the file is missing or is not a decodable video.
    """
    if not path.is_file():
        raise VideoError(f"{path} does not exist")
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise VideoError(f"{path} has no video stream")
            stream = container.streams.video[0]
            first = next(container.decode(stream), None)
            if first is None:
                raise VideoError(f"{path} has a video stream with no decodable frame")
            duration = _duration(container, stream)
            rate = float(stream.average_rate) if stream.average_rate else 0.0
            count = stream.frames or (round(duration * rate) if rate else 0)
            return VideoInfo(
                width=stream.codec_context.width,
                height=stream.codec_context.height,
                duration=duration,
                frame_count=count,
                codec=stream.codec_context.name,
                average_fps=rate,
            )
    except av.error.FFmpegError as exc:
        raise VideoError(f"{path} cannot be decoded: {exc}") from exc


def _duration(container: InputContainer, stream: av.VideoStream) -> float:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000
    return 0.0


def sample_times(
    duration: float, fps: float = DEFAULT_FPS, cap: int = DEFAULT_FRAME_CAP, last: float | None = None
) -> list[float]:
    """Timestamps (seconds) of the frames to keep.

    ``fps`` frames a second from t=0; if that is more than ``cap`` frames, ``cap`` times
    spread evenly from the first frame to the last one (``last``, default ``duration``).
    """
    if cap <= 0:
        return []
    if duration <= 0:
        return [0.0]
    n_at_rate = max(1, math.ceil(duration * fps - 1e-9))
    if n_at_rate <= cap:
        return [k / fps for k in range(n_at_rate)]
    if cap == 1:
        return [0.0]
    end = duration if last is None else max(0.0, min(last, duration))
    return [k * end / (cap - 1) for k in range(cap)]


@dataclass(frozen=True)
class Frame:
    """One sampled frame."""

    image: Image.Image
    """RGB frame."""
    timestamp: float
    """Presentation time of the decoded frame, in seconds."""
    target: float
    """Time that was asked for."""


class SamplingIdentity(BaseModel):
    """Everything that decides which frames a model sees; caches key on :meth:`key`."""

    fps: float
    """Sampling rate asked for."""
    cap: int
    """Maximum frame count asked for."""
    video_sha256: str
    """Digest of the video file's bytes."""
    timestamps: list[float]
    """Presentation times of the frames kept."""
    frame_digests: list[str]
    """SHA-256 of each frame's decoded pixels."""
    frame_phashes: list[str]
    """Perceptual hash of each frame (stable across FFmpeg builds where pixels may differ slightly)."""
    method: Literal["default", "official"] = "default"
    """``default`` (this project's rule) or ``official`` (the official generator's frame indices)."""
    indices: list[int] | None = None
    """Frame numbers read (official sampling only; ``timestamps`` are then ``index / fps``)."""
    total_frames: int | None = None
    """Frame count the official rule started from (cv2's ``CAP_PROP_FRAME_COUNT``)."""

    def key(self) -> str:
        """A short stable key: video bytes, rate, cap and the chosen times (and method, if official)."""
        fields: dict[str, object] = {
            "fps": self.fps,
            "cap": self.cap,
            "video": self.video_sha256,
            "t": [round(t, 3) for t in self.timestamps],
        }
        if self.method != "default":
            fields |= {"method": self.method, "indices": self.indices}
        payload = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class SampledFrames:
    """Frames plus the identity of the sampling that produced them."""

    frames: list[Frame]
    identity: SamplingIdentity


def sample_frames(path: Path, fps: float = DEFAULT_FPS, cap: int = DEFAULT_FRAME_CAP) -> SampledFrames:
    """Decode a video once and keep the frames at :func:`sample_times`.

    Each target time takes the first frame whose presentation time reaches it (the last frame
    for targets past the end).

    Raises:
        VideoError: when the video cannot be read.
    """
    info = probe_video(path)
    last = info.duration - 1 / info.average_fps if info.average_fps else None
    targets = sample_times(info.duration, fps, cap, last=last)
    frames: list[Frame] = []
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            previous: av.VideoFrame | None = None
            i = 0
            for vf in container.decode(stream):
                if i >= len(targets):
                    break
                t = float(vf.time)
                if t + 1e-6 >= targets[i]:
                    img = vf.to_image()
                    while i < len(targets) and t + 1e-6 >= targets[i]:
                        frames.append(Frame(image=img, timestamp=t, target=targets[i]))
                        i += 1
                previous = vf
            if i < len(targets) and previous is not None:
                img = previous.to_image()
                t = float(previous.time)
                frames.extend(Frame(image=img, timestamp=t, target=target) for target in targets[i:])
    except av.error.FFmpegError as exc:
        raise VideoError(f"{path} cannot be decoded: {exc}") from exc
    identity = SamplingIdentity(
        fps=fps,
        cap=cap,
        video_sha256=file_sha256(path),
        timestamps=[f.timestamp for f in frames],
        frame_digests=[pixel_digest(f.image) for f in frames],
        frame_phashes=[phash_hex(f.image) for f in frames],
    )
    return SampledFrames(frames=frames, identity=identity)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# -- the official generator's sampling ------------------------------------------------------------


def official_frame_indices(total_frames: int, fps: float, cap: int) -> list[int]:
    """Frame numbers the official generator reads from a video of ``total_frames`` at ``fps``.

    With ``D = total_frames / fps`` seconds and a cap of ``cap`` frames: when ``D > cap``, ``cap``
    frames at ``int(i * total_frames / cap)`` (the last frame is never included); otherwise ``int(D)``
    frames at ``int(i * fps)`` (one a second). No frames when any input is not positive.
    """
    if total_frames <= 0 or fps <= 0 or cap <= 0:
        return []
    duration = total_frames / fps
    if duration > cap:
        interval, count = total_frames / cap, cap
    else:
        interval, count = fps, int(duration)
    indices: list[int] = []
    for i in range(count):
        index = int(i * interval)
        if index >= total_frames:
            break
        indices.append(index)
    return indices


@dataclass(frozen=True)
class OfficialFrame:
    """One frame sampled the official way: its number, time and JPEG bytes."""

    index: int
    """Frame number in the video."""
    timestamp: float
    """``index / fps`` in seconds."""
    jpeg: bytes
    """The frame as cv2 writes it: JPEG, quality 95."""


@dataclass(frozen=True)
class OfficialSample:
    """Frames sampled the official way plus the identity of that sampling."""

    frames: list[OfficialFrame]
    identity: SamplingIdentity


def sample_frames_official(path: Path, cap: int) -> OfficialSample:
    """Sample a video as the official generator does: cv2 counts, seeks and reads the frames.

    cv2 reports the frame count and rate; :func:`official_frame_indices` picks the frames; each is
    read after a seek to its number and encoded as JPEG quality 95. A frame cv2 fails to read is
    skipped, as the official script skips it.

    Raises:
        VideoError: when the file is missing or cv2 cannot open it.
    """
    if not path.is_file():
        raise VideoError(f"{path} does not exist")
    capture = cv2.VideoCapture(str(path))
    try:
        if not capture.isOpened():
            raise VideoError(f"{path} cannot be opened as a video")
        fps = float(capture.get(cv2.CAP_PROP_FPS))
        total = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
        frames: list[OfficialFrame] = []
        digests: list[str] = []
        phashes: list[str] = []
        for index in official_frame_indices(total, fps, cap):
            capture.set(cv2.CAP_PROP_POS_FRAMES, index)
            ok, bgr = capture.read()
            if not ok:
                continue
            encoded_ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, OFFICIAL_JPEG_QUALITY])
            if not encoded_ok:  # pragma: no cover - encoding a decoded frame does not fail
                continue
            image = Image.fromarray(np.ascontiguousarray(bgr[:, :, ::-1]))
            frames.append(OfficialFrame(index=index, timestamp=index / fps, jpeg=buf.tobytes()))
            digests.append(pixel_digest(image))
            phashes.append(phash_hex(image))
    finally:
        capture.release()
    identity = SamplingIdentity(
        fps=1.0,
        cap=cap,
        video_sha256=file_sha256(path),
        timestamps=[f.timestamp for f in frames],
        frame_digests=digests,
        frame_phashes=phashes,
        method="official",
        indices=[f.index for f in frames],
        total_frames=total,
    )
    return OfficialSample(frames=frames, identity=identity)
