from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from PIL import Image

from iwr_bench.dataset.frames import VideoError, plan_images, probe_video, sample_frames, sample_times
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
