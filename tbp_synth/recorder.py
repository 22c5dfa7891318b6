"""Host events, CUDA runtime calls and host time of a rank's program (the recording side)."""

from __future__ import annotations

from typing import Tuple


class _NullSink:
    """Stands in for a RankTrace while ranks are only being timed."""

    n_device = 0

    def name_id(self, name):
        return 0

    def spec_id(self, spec):
        return 0

    def place_id(self, place):
        return 0

    def host_open(self, name_id, etype, tid, start):
        return -1

    def host_close(self, row, end):
        pass

    def host_shapes(self, row, shapes, dtypes):
        pass

    def runtime(self, *a):
        pass

    def device_event(self, *a):
        return -1

    def mem(self, *a):
        pass


class _Recorder:
    """A part of the rank program (:class:`.program._RankProgram`): host events, CUDA
    runtime calls and host time of a rank's program (the recording side)."""

    # -- small helpers
    def _adv(self, lo: int, hi: int) -> None:
        v = (lo + int(self._rnd() * (hi - lo))) & ~1
        self.t += v if self.hf == 1.0 else int(v * self.hf) & ~1

    def _sc(self, v: int) -> int:
        """A host duration under launch_overhead (even; may be 0)."""
        return v if self.hf == 1.0 else int(v * self.hf) & ~1

    def _scd(self, v: int) -> int:
        """A launch latency (host call's end to the kernel's earliest start) under
        launch_overhead."""
        return v if self.hf == 1.0 else int(v * self.hf)

    # Host times stay even and memory timestamps odd, so a memory event never sits on a host
    # event's boundary and every nesting is unambiguous for Paddle's tree rules.
    def _open(self, name: str, etype: int) -> int:
        t = self.t = self.t + 2 + self._sc(int(self._rnd() * 600) & ~1)
        sink = self.sink
        return sink.host_open(sink.name_id(name), etype, self.main_tid, t)

    def _close(self, row: int) -> None:
        t = self.t = self.t + 2 + self._sc(int(self._rnd() * 600) & ~1)
        self.sink.host_close(row, t)

    def _leaf(self, name: str, etype: int, lo: int, hi: int) -> None:
        rnd, sink = self._rnd, self.sink
        sc = self._sc
        t = self.t + 2 + sc(int(rnd() * 600) & ~1)
        row = sink.host_open(sink.name_id(name), etype, self.main_tid, t)
        t += sc((lo + int(rnd() * (hi - lo))) & ~1)
        t += 2 + sc(int(rnd() * 600) & ~1)
        self.t = t
        sink.host_close(row, t)

    def _spec(self, key: str) -> Tuple[int, int]:
        ids = self._spec_ids.get(key)
        if ids is None:
            spec = self.cat.spec[key]
            ids = self._spec_ids[key] = (self.sink.name_id(spec.name), self.sink.spec_id(spec))
        return ids

    def _next_corr(self) -> int:
        self.corr += 1
        return self.corr

    def _runtime(self, name: str, lo: int, hi: int) -> Tuple[int, int, int]:
        start = self.t
        self._adv(lo, hi)
        if self.t == start:  # launch_overhead 0: still a 2 ns call, inside its operator
            self.t += 2
        corr = self._next_corr()
        self.sink.runtime(self.sink.name_id(name), self.main_tid, start, self.t, corr)
        return start, self.t, corr
