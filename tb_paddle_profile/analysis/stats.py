"""Accumulators for the few analyses that walk nodes one by one (most use groupby.py):
calls and total/max/min of CPU and GPU times, as Paddle's EventSummary items keep them.
"""

from __future__ import annotations

from ..v1 import summary_pb2 as pb

INF = float("inf")


class TimeAcc:
    __slots__ = ("total", "max", "min")

    def __init__(self):
        self.total = 0
        self.max = 0
        self.min = INF

    def add(self, v: int) -> None:
        if v > self.max:
            self.max = v
        if v < self.min:
            self.min = v
        self.total += v

    def to_pb(self, msg: pb.TimeStats) -> None:
        msg.total_ns = int(self.total)
        msg.max_ns = int(self.max)
        msg.min_ns = int(self.min) if self.min != INF else 0


class EventAcc:
    """One row of Paddle's Operator / UserDefined / Model tables, keyed by name."""

    __slots__ = ("name", "calls", "cpu", "gpu", "general")

    def __init__(self, name: str):
        self.name = name
        self.calls = 0
        self.cpu = TimeAcc()
        self.gpu = TimeAcc()
        self.general = TimeAcc()

    def add(self, cpu: int, gpu: int, general: int) -> None:
        self.calls += 1
        self.cpu.add(cpu)
        self.gpu.add(gpu)
        self.general.add(general)

    def to_pb(self, msg: pb.EventStats) -> None:
        msg.name = self.name
        msg.calls = self.calls
        self.cpu.to_pb(msg.cpu)
        self.gpu.to_pb(msg.gpu)
        self.general.to_pb(msg.general_gpu)
