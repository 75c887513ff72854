"""Peak resident memory of this process over a window, sampled in a thread (CPU has no allocator API)."""

from __future__ import annotations

import threading

import psutil


class RssPeak:
    """Context manager; `.peak_delta` is the highest RSS seen minus RSS at entry, in bytes."""

    def __init__(self, interval_s: float = 0.002):
        self.interval_s = interval_s
        self.proc = psutil.Process()
        self.baseline = 0
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def __enter__(self) -> "RssPeak":
        self.baseline = self.proc.memory_info().rss
        self.peak = self.baseline
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def peak_delta(self) -> int:
        return max(0, self.peak - self.baseline)
