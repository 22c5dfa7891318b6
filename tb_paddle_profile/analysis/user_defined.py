"""Paddle's Memory Manipulation and UserDefined summaries.

UserDefined and PythonUserDefined nodes whose lower-cased name holds memcpy,
memorycopy or memset are memory manipulation; of the rest, only PythonUserDefined
nodes (user RecordEvents) are listed as user-defined. C++ UserDefined events such
as `<op> pybind_imperative_func` appear in neither table.
"""
from __future__ import annotations

from typing import Dict

from .. import event_types as et
from ..v1 import summary_pb2 as pb
from .profile import Profile
from .stats import EventAcc

MEMORY_WORDS = ("memcpy", "memorycopy", "memset")


def user_defined_views(p: Profile, memory_out, udf_out: pb.UserDefinedView) -> None:
    t, tm = p.tables, p.times
    is_memory = [any(w in n.lower() for w in MEMORY_WORDS) for n in t.names]
    memory: Dict[int, EventAcc] = {}
    udf: Dict[int, EventAcc] = {}

    def add(items, row):
        key = int(t.host_name[row])
        item = items.get(key)
        if item is None:
            item = items[key] = EventAcc(t.names[key])
        item.add(int(tm.cpu[row]), int(tm.gpu[row]), int(tm.general_gpu[row]))

    for tid in p.tree.threads:
        per_thread: Dict[int, EventAcc] = {}
        for row in p.tree.walk[tid].tolist():
            ty = t.host_type[row]
            if ty != et.USER_DEFINED and ty != et.PYTHON_USER_DEFINED:
                continue
            if is_memory[t.host_name[row]]:
                add(memory, row)
            elif ty == et.PYTHON_USER_DEFINED:
                add(udf, row)
                add(per_thread, row)
        if per_thread:
            th = udf_out.threads.add(thread_id=int(tid))
            for item in per_thread.values():
                item.to_pb(th.items.add())
    for item in udf.values():
        item.to_pb(udf_out.items.add())
    for item in memory.values():
        item.to_pb(memory_out.add())
