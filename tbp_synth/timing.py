"""When device work runs: stream order, dependencies, kernel durations and NCCL kernels."""

from __future__ import annotations

import zlib
from typing import Iterable

from .model import KERNEL
from .config import COMPUTE_STREAM, _KEY_AXIS, _LAUNCH


class _Timing:
    """A part of the rank program (:class:`.program._RankProgram`): when device work runs:
    stream order, dependencies, kernel durations and NCCL kernels."""

    @staticmethod
    def _resolve(x):
        while x.end is None:
            yield x
        return x.end

    def _ready_after(self, t: int, deps: Iterable, gap: int = 0):
        """The later of ``t`` and each dependency's end plus ``gap``, waiting for any end
        still pending."""
        for d in deps:
            v = (d if type(d) is int else (yield from self._resolve(d))) + gap
            if v > t:
                t = v
        return t

    def _kernel_gap(self) -> int:
        return 700 + int(self.rng.random() * 900)

    def _xfer(self, key: tuple, nbytes: float, kind: str, factor: float = 1.0) -> int:
        planted = getattr(self.book, "nbytes", None)  # phase 1 records each instance's payload
        if planted is not None:
            planted[key] = int(nbytes)
        jitter = (zlib.crc32(repr((self.cfg.seed,) + key).encode()) % 1000) / 1000.0
        x = int(8000 + factor * nbytes / self.cat.bw[kind] * 1e9 * (0.97 + 0.06 * jitter))
        cf = self.comm_f.get(_KEY_AXIS[key[0]])
        if cf is not None:  # comm_factor: the whole transfer (latency included) scales
            x = int(round(x * cf))
        return x

    # -- device work
    def _kdur(self, key: str) -> int:
        """A compute kernel's duration: the catalogue's, jittered, slowed on the slow rank
        and by ``slow_kernel``."""
        if self.lognormal:
            d = self.cat.ns[key] * self.rng.lognormvariate(self.jitter_mu, self.jitter_sigma) * self.slow
        else:
            d = self.cat.ns[key] * (0.97 + 0.06 * self.rng.random()) * self.slow
        f = self.cat.kernel_factor.get(key)
        if f is not None:
            d *= f
        return int(d)

    def _launch(self, key: str):
        """cudaLaunchKernel of one compute kernel on the compute stream."""
        _, rt_end, corr = self._runtime(_LAUNCH, 2400, 5200)
        ready = rt_end + self._scd(400 + int(self.rng.random() * 1200))
        free = self.stream_free[COMPUTE_STREAM]
        deps = self.compute_wait
        if deps:
            self.compute_wait = []
            ready = yield from self._ready_after(ready, deps, self._kernel_gap())
        # a queued kernel starts a little after the one before it, as on real GPUs
        ready = yield from self._ready_after(ready, (free,), self._kernel_gap())
        end = ready + self._kdur(key)
        self.compute_ns[self.step_idx] += end - ready
        self.stream_free[COMPUTE_STREAM] = end
        nid, sid = self._spec(key)
        if self.sink.device_event(nid, KERNEL, COMPUTE_STREAM, ready, end, corr, sid) >= 0:
            self._credit_layer(ready, end, False)
        if self.slot is not None:
            if self.slot[0] is None:
                self.slot[0] = ready
            self.slot[1] = end
        self.t += self._sc(200 + (int(self.rng.random() * 600) & ~1))

    def _nccl(self, spec_key: str, kind: str, key: tuple, size: int, xfer: int, stream: int, role: int = 0):
        """cudaLaunchKernel of an NCCL kernel; returns its end (or a pending end).

        On a communication stream the kernel first waits for the compute stream (Paddle
        records an event there so the data it sends is ready)."""
        _, rt_end, corr = self._runtime(_LAUNCH, 2800, 6400)
        ready = rt_end + self._scd(500 + int(self.rng.random() * 1500))
        gap = self._kernel_gap()
        deps = [self.stream_free[stream]]
        if stream != COMPUTE_STREAM:
            deps.append(self.stream_free[COMPUTE_STREAM])
        elif self.compute_wait:
            deps.extend(self.compute_wait)
            self.compute_wait = []
        start = yield from self._ready_after(ready, deps, gap)
        end = self.book.launch(self.rank, key, size, start, xfer, self.cfg.first_step + self.step_idx, role)
        self.stream_free[stream] = end
        nid, sid = self._spec(spec_key)
        row = self.sink.device_event(nid, KERNEL, stream, start, end, corr, sid)
        if row >= 0:
            self.comm_log.append((kind, self.step_idx, row, start, end, xfer))
            self._credit_layer(start, end, True)
        self.t += self._sc(200 + (int(self.rng.random() * 600) & ~1))
        return end
