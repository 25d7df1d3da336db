from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest
from coded_video import coded_video, frame_number_of
from PIL import Image

from iwr_bench.dataset.frames import (
    VideoError,
    official_frame_indices,
    plan_images,
    probe_video,
    sample_frames,
    sample_frames_official,
    sample_times,
)
from iwr_bench.dataset.media import write_video


def _video(path: Path, seconds: float, fps: int, size: tuple[int, int] = (64, 48)) -> Path:
    frames = (Image.new("RGB", size, ((i * 7) % 256, (i * 3) % 256, 128)) for i in range(int(seconds * fps)))
    write_video(frames, path, fps=fps)
    return path


@pytest.fixture(scope="module")
def short_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _video(tmp_path_factory.mktemp("v") / "short.mp4", seconds=5.5, fps=10)


@pytest.fixture(scope="module")
def long_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _video(tmp_path_factory.mktemp("v") / "long.mp4", seconds=100, fps=4, size=(32, 24))


def test_probe(short_video: Path) -> None:
    info = probe_video(short_video)
    assert (info.width, info.height, info.codec) == (64, 48, "h264")
    assert info.duration == pytest.approx(5.5, abs=0.11)
    assert info.frame_count == 55


def test_one_frame_per_second_with_timestamps(short_video: Path) -> None:
    sampled = sample_frames(short_video)
    assert [f.timestamp for f in sampled.frames] == pytest.approx([0, 1, 2, 3, 4, 5], abs=0.01)
    assert all(f.image.size == (64, 48) for f in sampled.frames)
    assert sampled.identity.timestamps == [f.timestamp for f in sampled.frames]
    assert len(set(sampled.identity.frame_digests)) == 6


def test_long_video_gives_cap_frames_spread_over_the_whole_video(long_video: Path) -> None:
    sampled = sample_frames(long_video)
    times = [f.timestamp for f in sampled.frames]
    assert len(times) == 64
    assert times[0] == 0.0
    assert times[-1] == pytest.approx(99.75, abs=0.01)  # the last frame
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) > 1.25 and max(gaps) < 1.9  # even: 99.75 / 63 = 1.58 s


def test_smaller_cap_spreads_fewer_frames(short_video: Path) -> None:
    sampled = sample_frames(short_video, cap=3)
    assert [f.timestamp for f in sampled.frames] == pytest.approx([0, 2.7, 5.4], abs=0.01)


def test_sample_times_rules() -> None:
    assert sample_times(3.0) == [0.0, 1.0, 2.0]
    assert sample_times(3.2) == [0.0, 1.0, 2.0, 3.0]
    assert sample_times(64.0) == [float(k) for k in range(64)]
    assert len(sample_times(64.5)) == 64
    assert sample_times(10.0, fps=2, cap=100)[:3] == [0.0, 0.5, 1.0]
    assert sample_times(0.0) == [0.0]
    assert sample_times(5.0, cap=0) == []


def test_image_budget_plan() -> None:
    assert plan_images(3).model_dump() == {"sheets": 3, "frames": 64}  # 70 images / 64 frames
    assert plan_images(10).model_dump() == {"sheets": 10, "frames": 60}
    assert plan_images(5, image_budget=20, frame_cap=20).model_dump() == {"sheets": 5, "frames": 15}
    assert plan_images(25, image_budget=20, frame_cap=20).model_dump() == {"sheets": 20, "frames": 0}
    with pytest.raises(ValueError, match="negative"):
        plan_images(1, image_budget=-1)


def test_sampling_identity_is_stable_and_sensitive(short_video: Path, tmp_path: Path) -> None:
    a = sample_frames(short_video).identity
    b = sample_frames(short_video).identity
    assert a == b and a.key() == b.key()
    assert sample_frames(short_video, cap=3).identity.key() != a.key()
    other = _video(tmp_path / "other.mp4", seconds=5.5, fps=10, size=(66, 48))
    assert sample_frames(other).identity.key() != a.key()


def test_bad_videos_raise_video_error(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="does not exist"):
        sample_frames(tmp_path / "missing.mp4")
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00" * 4096)
    with pytest.raises(VideoError, match="cannot be decoded"):
        probe_video(junk)


# -- the official generator's sampling -------------------------------------------------------------


def test_official_indices_follow_the_official_rule() -> None:
    # At most the cap of seconds: int(D) frames, one a second, the fraction of a second dropped.
    assert official_frame_indices(55, 10.0, 64) == [0, 10, 20, 30, 40]
    assert official_frame_indices(640, 10.0, 64) == [i * 10 for i in range(64)]  # D == cap: 1 FPS still
    assert official_frame_indices(300, 29.97, 64) == [int(i * 29.97) for i in range(10)]
    # Past the cap: cap frames at int(i * total / cap); the last frame is never taken.
    long = official_frame_indices(400, 4.0, 64)
    assert long == [int(i * 400 / 64) for i in range(64)]
    assert long[:5] == [0, 6, 12, 18, 25] and long[-1] == 393
    assert official_frame_indices(641, 10.0, 64)[-1] == int(63 * 641 / 64)
    # No frames for a cap of 0 or an unreadable count/rate.
    assert official_frame_indices(400, 4.0, 0) == []
    assert official_frame_indices(0, 4.0, 64) == official_frame_indices(400, 0.0, 64) == []
    # This differs from the default rule (ceil(D) frames, spread to the very end).
    assert len(sample_times(5.5)) == 6


@pytest.fixture(scope="module")
def coded_short(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return coded_video(tmp_path_factory.mktemp("v") / "short.mp4", frames=55, fps=10)


@pytest.fixture(scope="module")
def coded_long(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return coded_video(tmp_path_factory.mktemp("v") / "long.mp4", frames=400, fps=4, size=(32, 24))


def _q95_tables() -> dict[int, list[int]]:
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), "gray").save(buf, format="JPEG", quality=95)
    with Image.open(buf) as img:
        return img.quantization  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize(
    ("which", "cap", "expected"), [("short", 64, [0, 10, 20, 30, 40]), ("long", 64, None)]
)
def test_official_sampler_reads_exactly_those_frames_as_jpeg_q95(
    coded_short: Path, coded_long: Path, which: str, cap: int, expected: list[int] | None
) -> None:
    path = coded_short if which == "short" else coded_long
    sample = sample_frames_official(path, cap)
    want = expected or [int(i * 400 / 64) for i in range(64)]
    assert [f.index for f in sample.frames] == want
    # The pixels are those frames (each frame shows its number), not neighbours.
    assert [frame_number_of(f.jpeg) for f in sample.frames] == want
    fps = 10.0 if which == "short" else 4.0
    assert [f.timestamp for f in sample.frames] == pytest.approx([i / fps for i in want])
    identity = sample.identity
    assert identity.method == "official" and identity.indices == want
    assert identity.total_frames == (55 if which == "short" else 400)
    assert identity.timestamps == [f.timestamp for f in sample.frames]
    for frame in sample.frames:
        with Image.open(io.BytesIO(frame.jpeg)) as img:
            assert img.format == "JPEG"
            assert img.quantization == _q95_tables()  # pyright: ignore[reportAttributeAccessIssue]


def test_official_sampling_has_its_own_cache_key(coded_short: Path) -> None:
    official = sample_frames_official(coded_short, 64).identity
    default = sample_frames(coded_short).identity
    assert official.key() != default.key()
    assert official.key() == sample_frames_official(coded_short, 64).identity.key()
    assert sample_frames_official(coded_short, 3).identity.indices == [0, 18, 36]


def test_official_sampler_rejects_a_missing_or_broken_video(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="does not exist"):
        sample_frames_official(tmp_path / "nope.mp4", 64)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all")
    with pytest.raises(VideoError, match="cannot be opened"):
        sample_frames_official(junk, 64)
