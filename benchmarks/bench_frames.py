"""Frame sampling: one sequential decode (what we do) versus one seek per sampled frame.

Prints seconds per video for each strategy and the ratio, measured in the same run on the same
720p H.264 clip. Run with ``make bench`` or ``.venv/bin/python benchmarks/bench_frames.py``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import av
from PIL import Image, ImageDraw

from iwr_bench.dataset.frames import probe_video, sample_frames, sample_times
from iwr_bench.dataset.media import write_video


def _clip(path: Path, seconds: int = 40, fps: int = 10) -> None:
    def frames():
        for i in range(seconds * fps):
            img = Image.new("RGB", (1280, 720), (240, 240, 245))
            ImageDraw.Draw(img).rectangle((i * 3 % 1200, 100, i * 3 % 1200 + 80, 400), fill=(40, 90, 200))
            yield img

    write_video(frames(), path, fps=fps)


def _seek_each(path: Path) -> int:
    info = probe_video(path)
    times = sample_times(info.duration)
    kept = 0
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        for t in times:
            container.seek(int(t / stream.time_base), stream=stream, backward=True)
            for frame in container.decode(stream):
                if frame.time + 1e-6 >= t:
                    frame.to_image()
                    kept += 1
                    break
    return kept


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clip = Path(tmp) / "clip.mp4"
        _clip(clip)
        ours, seek = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            n = len(sample_frames(clip).frames)
            ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            m = _seek_each(clip)
            seek.append(time.perf_counter() - t0)
        a, b = statistics.median(ours), statistics.median(seek)
        print(f"frame sampling, 40 s 1280x720 clip: sequential {a:.3f} s ({n} frames, with hashes)")
        print(f"                                     seek-per-frame {b:.3f} s ({m} frames, no hashes)")
        print(f"ratio seek/sequential: {b / a:.2f}x")


if __name__ == "__main__":
    main()
