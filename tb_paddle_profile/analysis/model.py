"""Paddle's Model Summary: ProfileStep and the outermost Dataloader/Forward/Backward/Optimization.

Collection follows EventSummary.parse: a breadth-first walk from each thread root;
a stage node is taken and not descended into (so only the outermost counts), a
ProfileStep is taken and descended into, anything else is descended into. Each
stage node is also credited to the ProfileStep whose range holds its start, which
gives the per-step values the panels chart.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Dict, List, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from ..v1 import summary_pb2 as pb
from .profile import Profile
from .stats import EventAcc

_STEP_NUMBER = re.compile(r"#(\d+)\s*$")
_STAGE_FIELD = {
    et.DATALOADER: "dataloader",
    et.FORWARD: "forward",
    et.BACKWARD: "backward",
    et.OPTIMIZATION: "optimization",
}


class ModelAnalysis:
    def __init__(self, p: Profile):
        t, tree = p.tables, p.tree
        self.items: Dict[int, EventAcc] = {}  # type → acc, insertion order
        stage_rows: List[int] = []
        step_rows: List[int] = []
        for tid in tree.threads:
            queue = deque(tree.root_children[tid].tolist())
            # BFS as Paddle does: children of a node are examined in order.
            while queue:
                row = queue.popleft()
                ty = int(t.host.type[row])
                if ty in et.MODEL_STAGES:
                    self._add(ty, row, p)
                    stage_rows.append(row)
                    continue
                if ty == et.PROFILE_STEP:
                    self._add(ty, row, p)
                    step_rows.append(row)
                queue.extend(tree.children(row).tolist())
        step_rows.sort(key=lambda r: int(t.host.start[r]))
        self.steps: List[Tuple[int, int, int]] = []
        for r in step_rows:
            m = _STEP_NUMBER.search(t.names[t.host.name[r]])
            self.steps.append((int(m.group(1)) if m else -1, int(t.host.start[r]), int(t.host.end[r])))
        self._step_rows = step_rows
        self._stage_rows = stage_rows
        self._p = p

    def _add(self, ty: int, row: int, p: Profile) -> None:
        item = self.items.get(ty)
        if item is None:
            item = self.items[ty] = EventAcc(et.TYPE_NAMES[ty])
        item.add(int(p.times.cpu[row]), int(p.times.gpu[row]), int(p.times.general_gpu[row]))

    def stage_items(self) -> Dict[int, EventAcc]:
        return {ty: acc for ty, acc in self.items.items() if ty in et.MODEL_STAGES}

    def to_pb(self, out: pb.ModelView) -> None:
        for item in self.items.values():
            item.to_pb(out.items.add())
        t, tm = self._p.tables, self._p.times
        starts = np.array([s for _, s, _ in self.steps], dtype=np.int64)
        msgs = []
        for (number, start, end), row in zip(self.steps, self._step_rows):
            m = out.steps.add(step=number, gpu_ns=int(tm.gpu[row]))
            m.range.start_ns, m.range.end_ns = start, end
            msgs.append(m)
        for row in self._stage_rows:
            s = int(t.host.start[row])
            i = int(np.searchsorted(starts, s, side="right")) - 1
            if i < 0 or s >= self.steps[i][2]:
                continue
            field = _STAGE_FIELD[int(t.host.type[row])]
            setattr(msgs[i], field + "_cpu_ns", getattr(msgs[i], field + "_cpu_ns") + int(tm.cpu[row]))
            setattr(msgs[i], field + "_gpu_ns", getattr(msgs[i], field + "_gpu_ns") + int(tm.gpu[row]))
