"""Paddle's Kernel Summary, plus launch configurations and the operators that launched each kernel.

Items: every Kernel-type device event under any runtime call, those of thread
roots included, keyed by the full name, in the order Paddle's walk meets them.
"""
from __future__ import annotations

from typing import Dict, Tuple

from .. import event_types as et
from ..v1 import summary_pb2 as pb
from .profile import Profile
from .stats import TimeAcc


class _Kernel:
    __slots__ = ("name", "calls", "gpu", "configs", "operators")

    def __init__(self, name):
        self.name = name
        self.calls = 0
        self.gpu = TimeAcc()
        self.configs: Dict[tuple, list] = {}
        self.operators: Dict[str, Tuple[list]] = {}


def kernel_view(p: Profile, out: pb.KernelView) -> None:
    t, tree = p.tables, p.tree
    kernels: Dict[int, _Kernel] = {}
    owner_cache: Dict[int, str] = {}

    def owner_name(host_row: int) -> str:
        if host_row < 0:
            return ""
        name = owner_cache.get(host_row)
        if name is None:
            r = host_row
            while r >= 0 and t.host_type[r] != et.OPERATOR:
                r = int(tree.host_parent[r])
            name = t.names[t.host_name[r if r >= 0 else host_row]]
            owner_cache[host_row] = name
        return name

    def visit(rt_rows, host_row):
        for rt in rt_rows:
            for d in tree.devices(rt).tolist():
                if t.dev_type[d] != et.KERNEL:
                    continue
                key = int(t.dev_name[d])
                k = kernels.get(key)
                if k is None:
                    k = kernels[key] = _Kernel(t.names[key])
                dur = int(t.dev_end[d] - t.dev_start[d])
                k.calls += 1
                k.gpu.add(dur)
                cfg = (tuple(t.dev_grid[d].tolist()), tuple(t.dev_block[d].tolist()),
                       int(t.dev_registers[d]), int(t.dev_shared_memory[d]),
                       float(t.dev_blocks_per_sm[d]), float(t.dev_warps_per_sm[d]), float(t.dev_occupancy[d]))
                c = k.configs.setdefault(cfg, [0, 0])
                c[0] += 1
                c[1] += dur
                op = k.operators.get(owner_name(host_row))
                if op is None:
                    op = k.operators[owner_name(host_row)] = [0, TimeAcc()]
                op[0] += 1
                op[1].add(dur)

    for tid in tree.threads:
        visit(tree.root_runtimes[tid].tolist(), -1)
        for row in tree.walk[tid].tolist():
            visit(tree.runtimes(row).tolist(), row)

    for k in kernels.values():
        msg = out.kernels.add(name=k.name, calls=k.calls)
        k.gpu.to_pb(msg.gpu)
        for cfg, (calls, total) in sorted(k.configs.items(), key=lambda kv: kv[1][1], reverse=True):
            grid, block, regs, smem, bps, wps, occ = cfg
            msg.configs.add(grid=grid, block=block, registers_per_thread=regs, shared_memory=smem,
                            blocks_per_sm=bps, warps_per_sm=wps, occupancy_pct=occ, calls=calls, total_ns=total)
        for name, (calls, acc) in k.operators.items():
            o = msg.operators.add(operator=name, calls=calls)
            acc.to_pb(o.gpu)
