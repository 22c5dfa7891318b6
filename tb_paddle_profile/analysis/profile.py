"""The analysed input every analysis reads: tables, tree and per-node times."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_paddle_profile.trace.event_tree import EventTree, NodeTimes, build_tree, node_times
from tb_paddle_profile.trace.reader import EventTables


@dataclass
class Profile:
    tables: EventTables
    tree: EventTree
    times: NodeTimes
    # host row → its position in Paddle's walk (threads ascending, then walk order)
    walk_rank: np.ndarray

    @classmethod
    def build(cls, tables: EventTables) -> "Profile":
        tree = build_tree(tables)
        rank = np.zeros(len(tables.host.tid), dtype=np.int64)
        walk = [tree.walk[tid] for tid in tree.threads]
        if walk:
            rows = np.concatenate(walk)
            rank[rows] = np.arange(rows.size)
        return cls(tables, tree, node_times(tree), rank)

    def name(self, name_id: int) -> str:
        return self.tables.names[name_id]
