"""Paddle's Memory Manipulation and UserDefined summaries.

UserDefined and PythonUserDefined nodes whose lower-cased name holds memcpy,
memorycopy or memset are memory manipulation; of the rest, only PythonUserDefined
nodes (user RecordEvents) are listed as user-defined. C++ UserDefined events such
as `<op> pybind_imperative_func` appear in neither table.
"""

from __future__ import annotations

import numpy as np

from tb_paddle_profile.trace import event_types as et
from ..v1 import summary_pb2 as pb
from .groupby import group, host_values, write_stats
from .profile import Profile

MEMORY_WORDS = ("memcpy", "memorycopy", "memset")


def user_defined_views(p: Profile, memory_out, udf_out: pb.UserDefinedView) -> None:
    t = p.tables
    is_memory = np.array([any(w in n.lower() for w in MEMORY_WORDS) for n in t.names], dtype=bool)
    user = (t.host.type == et.USER_DEFINED) | (t.host.type == et.PYTHON_USER_DEFINED)
    named_memory = is_memory[t.host.name] if len(t.host.name) else np.zeros(0, bool)
    mem_rows = np.nonzero(user & named_memory)[0]
    udf_rows = np.nonzero(user & ~named_memory & (t.host.type == et.PYTHON_USER_DEFINED))[0]

    g = group([t.host.name[mem_rows]], [p.walk_rank[mem_rows]], host_values(p, mem_rows))
    for i in range(len(g)):
        write_stats(memory_out.add(), t.names[g.keys[0][i]], g, i)

    g = group([t.host.name[udf_rows]], [p.walk_rank[udf_rows]], host_values(p, udf_rows))
    for i in range(len(g)):
        write_stats(udf_out.items.add(), t.names[g.keys[0][i]], g, i)
    g = group([t.host.tid[udf_rows], t.host.name[udf_rows]], [p.walk_rank[udf_rows]], host_values(p, udf_rows))
    threads = {}
    for i in range(len(g)):
        tid = int(g.keys[0][i])
        if tid not in threads:
            threads[tid] = udf_out.threads.add(thread_id=tid)
        write_stats(threads[tid].items.add(), t.names[g.keys[1][i]], g, i)
