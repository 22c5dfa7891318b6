"""A progress line on stderr for the CLI's long commands: counts, bytes and the time left.

    progress = Progress(enabled=sys.stderr.isatty())
    progress.start(total=48, total_bytes=3_200_000_000, what="traces")
    progress.update(done=12, done_bytes=800_000_000)      # as often as wanted: drawn at most 10 times a second
    progress.phase("analysing 48 ranks")                  # a step with no count
    progress.finish()                                     # the line is erased

One line, redrawn in place with a carriage return, erased at the end, so that what the command prints
on stdout (text, JSON, CSV) is never mixed with it, and a log of stderr holds none of it when the
command is not run in a terminal (``enabled`` False: every call does nothing). The time left is the
bytes still to read at the rate read so far (the counts' rate when there are no sizes).
"""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

BAR = 24
REDRAW_S = 0.1


def human_bytes(n: float) -> str:
    """1.50 MiB style (binary units), as the display model's "human" bytes (present/display/cells.py)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024.0
    return f"{n:.2f} TiB"  # pragma: no cover - the loop returns


def human_seconds(s: float) -> str:
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """The progress line of one command (see the module's docstring)."""

    def __init__(self, enabled: bool = False, stream: Optional[TextIO] = None, clock=time.monotonic):
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._total = self._total_bytes = 0
        self._what = ""
        self._t0 = self._last = 0.0
        self._shown = 0  # width of the line on screen

    def start(self, total: int, total_bytes: int = 0, what: str = "traces") -> None:
        self._total, self._total_bytes, self._what = int(total), int(total_bytes), what
        self._t0 = self._clock()
        self._last = 0.0
        self.update(0, 0, force=True)

    def line(self, done: int, done_bytes: int, now: Optional[float] = None) -> str:
        """The text of the line for these counts (without the carriage return)."""
        now = self._clock() if now is None else now
        frac = done_bytes / self._total_bytes if self._total_bytes else done / self._total if self._total else 0.0
        frac = min(max(frac, 0.0), 1.0)
        filled = int(round(frac * BAR))
        parts = [f"[{'#' * filled}{'.' * (BAR - filled)}] {done}/{self._total} {self._what}"]
        if self._total_bytes:
            parts.append(f"{human_bytes(done_bytes)} of {human_bytes(self._total_bytes)}")
        elapsed = now - self._t0
        if 0 < frac < 1 and elapsed > 0:
            parts.append(f"about {human_seconds(elapsed * (1 - frac) / frac)} left")
        elif frac < 1:
            parts.append(f"{human_seconds(elapsed)} so far")
        return " · ".join(parts)

    def update(self, done: int, done_bytes: int = 0, force: bool = False) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if not force and now - self._last < REDRAW_S:
            return
        self._last = now
        self._draw(self.line(done, done_bytes, now))

    def phase(self, text: str) -> None:
        """A step without counts ("analysing 1,024 ranks"), shown until the next update or finish."""
        if self.enabled:
            self._draw(text + " ...")

    def finish(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0

    def _draw(self, text: str) -> None:
        pad = max(0, self._shown - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._shown = len(text)


def follow(loader, files, progress: Progress, pending) -> None:
    """Wait for ``loader`` (pipeline.loader.Loader: wait_idle, states) to finish ``files``, drawing
    ``progress`` (files done and their bytes) as they finish; ``pending`` the states still in flight."""
    sizes = [f.size for f in files]
    progress.start(len(files), sum(sizes), "traces")
    while not loader.wait_idle(timeout=0.2):
        done = [s.state not in pending for s in loader.states(files)]
        progress.update(sum(done), sum(n for n, d in zip(sizes, done) if d))
    progress.update(len(sizes), sum(sizes), force=True)


OFF = Progress(enabled=False)
