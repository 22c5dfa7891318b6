"""The rank's allocators (GPU, CPU, pinned) and their memory events."""

from __future__ import annotations

import collections
from typing import Dict, List

from .model import ALLOCATE, FREE, RESERVED_ALLOCATE, RESERVED_FREE


class _Allocator:
    """One place's allocator: live blocks, current/peak counters and reserved chunks."""

    def __init__(self, place: str, base: int, allocated: int, reserved: int, chunk: int):
        self.place = place
        self.cur = allocated
        self.res = max(reserved, allocated)
        self.peak = self.cur
        self.peak_res = self.res
        self.chunk = chunk
        self.base = base
        self.top = base
        self.free_blocks: Dict[int, List[int]] = collections.defaultdict(list)
        self.size_of: Dict[int, int] = {}
        self.frag = 0  # reserved bytes no allocation can use (fragment_bytes_per_step)


class _Memory:
    """A part of the rank program (:class:`.program._RankProgram`): the rank's allocators
    (GPU, CPU, pinned) and their memory events."""

    # -- memory
    def _setup_memory(self) -> None:
        cfg, cat, rnd = self.cfg, self.cat, self.rng.random
        params = cat.layer_params * self.n_layers
        if self.first_stage or self.last_stage:
            params += cfg.vocab // cfg.mp * cfg.hidden
        static = params * 16
        per_layer = 14 * cat.act_bytes + 3 * cat.scores_bytes  # saved for backward
        budget = 60 * 1024**3
        need = static + per_layer * self._inflight_layers()
        self.mem_scale = min(1.0, budget / need)
        chunk = 1 << 30
        base = 0x7F3A00000000 + (self.rank << 36)
        static = int(static * self.mem_scale)
        self.gpu = _Allocator(
            "Place(gpu:%d)" % self.device_id, base, static, -(-static // chunk) * chunk + chunk, chunk
        )
        host_now = 180_000_000 + int(rnd() * 20_000_000)  # what the process already holds
        self.cpu = _Allocator("Place(cpu)", 0x55D000000000 + (self.rank << 32), host_now, host_now, 64 << 20)
        self.pinned = _Allocator("Place(gpu_pinned)", 0x7F9000000000 + (self.rank << 32), 0, 0, 32 << 20)
        self.pinned_live: collections.deque = collections.deque()

    def _inflight_layers(self) -> int:
        """Decoder layers' activations alive at once at the schedule's peak (sizes memory)."""
        cfg = self.cfg
        if cfg.schedule == "gpipe":
            return self.n_layers * cfg.micro_batches
        if cfg.schedule == "interleaved":
            peak, live = 0, 0
            for phase, _, _ in self.order:
                live += 1 if phase == 0 else -1
                peak = max(peak, live)
            return self.n_layers // self.V * peak
        inflight = min(cfg.micro_batches, cfg.pp - self.pp_i) if cfg.pp > 1 else 1
        return self.n_layers * inflight

    def _mem_event(self, a: _Allocator, mtype: int, addr: int, inc: int, tid: int) -> None:
        self.sink.mem(mtype, tid, self.t + 1, self.sink.place_id(a.place), addr, inc, a.cur, a.res, a.peak, a.peak_res)
        self.t += 2

    def _alloc(self, a: _Allocator, size: int, tid: int = 0, raw: bool = False) -> int:
        tid = tid or self.main_tid
        if raw:  # exactly this many bytes (rounded up to the allocator's 256)
            size = max(256, -(-int(size) // 256) * 256)
        else:
            size = max(256, -(-int(size * (self.mem_scale if a is self.gpu else 1.0)) // 256) * 256)
        while a.cur + size > a.res - a.frag:
            grow = max(a.chunk, -(-(a.cur + size - a.res) // a.chunk) * a.chunk)
            a.res += grow
            a.peak_res = max(a.peak_res, a.res)
            self._mem_event(a, RESERVED_ALLOCATE, a.top, grow, tid)
        blocks = a.free_blocks.get(size)
        if blocks:
            addr = blocks.pop()
        else:
            addr = a.top
            a.top += size
        a.size_of[addr] = size
        a.cur += size
        if a.cur > a.peak:
            a.peak = a.cur
        self._mem_event(a, ALLOCATE, addr, size, tid)
        return addr

    def _free(self, a: _Allocator, addr: int, tid: int = 0) -> None:
        size = a.size_of.pop(addr)
        a.cur -= size
        a.free_blocks[size].append(addr)
        self._mem_event(a, FREE, addr, -size, tid or self.main_tid)

    def _trim(self, a: _Allocator) -> None:
        """Give one cached chunk back when much more is reserved than allocated."""
        if a.res - a.cur - a.frag > 3 * a.chunk:
            a.res -= a.chunk
            self._mem_event(a, RESERVED_FREE, a.base + a.res, -a.chunk, self.main_tid)

    def _fragment(self, nbytes: int) -> None:
        """fragment_bytes_per_step: the allocator reserves a segment for a temporary that is
        freed at once, and the segment stays cached but unusable (reserved - allocated grows
        by ``nbytes``, rounded up to 256)."""
        a = self.gpu
        n = max(256, -(-int(nbytes) // 256) * 256)
        addr = a.top
        a.res += n
        a.peak_res = max(a.peak_res, a.res)
        a.frag += n
        self._mem_event(a, RESERVED_ALLOCATE, addr, n, self.main_tid)
        a.top += n
        a.cur += n
        a.peak = max(a.peak, a.cur)
        self._mem_event(a, ALLOCATE, addr, n, self.main_tid)
        a.cur -= n
        self._mem_event(a, FREE, addr, -n, self.main_tid)

    def _flush_frees(self) -> None:
        for a, addr in self.pending_free:
            self._free(a, addr)
        self.pending_free.clear()
