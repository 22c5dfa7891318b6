"""Accumulators shared by the analyses: calls and total/max/min of CPU and GPU times.

They mirror Paddle's EventSummary item classes (calls, cpu_time, gpu_time,
general_gpu_time with their max and min) and write themselves into protobuf.
"""
from __future__ import annotations

from typing import Dict

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

    __slots__ = ("name", "calls", "cpu", "gpu", "general", "inners", "devices", "shapes")

    def __init__(self, name: str):
        self.name = name
        self.calls = 0
        self.cpu = TimeAcc()
        self.gpu = TimeAcc()
        self.general = TimeAcc()
        self.inners: Dict[int, "EventAcc"] = {}
        self.devices: Dict[int, "DeviceAcc"] = {}
        self.shapes: Dict[tuple, "EventAcc"] = {}

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


class DeviceAcc:
    __slots__ = ("name", "event_type", "calls", "gpu")

    def __init__(self, name: str, event_type: str):
        self.name = name
        self.event_type = event_type
        self.calls = 0
        self.gpu = TimeAcc()

    def add(self, dur: int) -> None:
        self.calls += 1
        self.gpu.add(dur)

    def to_pb(self, msg: pb.DeviceStats) -> None:
        msg.name = self.name
        msg.event_type = self.event_type
        msg.calls = self.calls
        self.gpu.to_pb(msg.gpu)
