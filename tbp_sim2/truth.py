"""What the simulator knows and a tool has to find: every rank's coordinates, host and clock, every
collective instance with its members and their per-rank ordinals, and each planted anomaly's cost to
the job per step, measured by running the same job without it."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Dict, List

import numpy as np

from .config import SimConfig
from .engine import Engine, simulate

TRUTH_FILE = "sim2_truth.json"


def instances(eng: Engine) -> List[dict]:
    """Every collective and send/recv instance of the recorded steps: kind, ProfileStep, axis, the
    members (rank, ordinal among the rank's instances of that step and kind in launch order, send/recv
    direction) and how far apart the members' ends are on the global clock (ns)."""
    cfg = eng.cfg
    first = cfg.warmup
    by_key: List[Dict[tuple, int]] = []
    for st in eng.stages:
        p = st.p
        by_key.append({p.k_key[k]: k for k in range(len(p.k_name)) if p.k_axis[k] in ("p2p", "ppg")})
    out: List[dict] = []
    for st in eng.stages:
        p, s = st.p, st.p.stage
        for k in range(len(p.k_name)):
            ax = p.k_axis[k]
            if not ax or p.k_step[k] < first:
                continue
            groups: List[List[tuple]] = []  # (stage, lane, kernel)
            SH = cfg.sharding
            if ax == "mp":
                groups = [[(s, d * cfg.mp + m, k) for m in range(cfg.mp)] for d in range(cfg.dp_lanes)]
            elif ax == "dp":
                groups = [
                    [(s, (d * SH + h) * cfg.mp + m, k) for d in range(cfg.dp)] for h in range(SH) for m in range(cfg.mp)
                ]
            elif ax == "sh":
                groups = [
                    [(s, (d * SH + h) * cfg.mp + m, k) for h in range(SH)] for d in range(cfg.dp) for m in range(cfg.mp)
                ]
            elif ax == "ppg":
                if s != 0:
                    continue
                key = p.k_key[k]
                groups = [[(t, lane, by_key[t][key]) for t in range(cfg.pp)] for lane in range(st.L)]
            else:
                if p.k_dir[k] != "send":
                    continue
                key = p.k_key[k]
                peer = s + 1 if key[3] == "fwd" else s - 1
                groups = [[(s, lane, k), (peer, lane, by_key[peer][key])] for lane in range(st.L)]
            for g in groups:
                ends = [eng.stages[t].k_end[kk, lane] for t, lane, kk in g]
                members = []
                for t, lane, kk in g:
                    pt = eng.stages[t].p
                    m = {"rank": int(eng.stages[t].ranks[lane]), "ordinal": pt.k_ordinal[kk]}
                    if pt.k_dir[kk]:
                        m["direction"] = pt.k_dir[kk]
                    members.append(m)
                out.append(
                    {
                        "kind": p.k_ckind[k],
                        "step": p.k_step[k],
                        "axis": ax,
                        "members": members,
                        "end_spread_ns": float(max(ends) - min(ends)),
                    }
                )
    return out


def costs(cfg: SimConfig, observed_ns: float) -> dict:
    """The healthy step and each anomaly's cost per step: the step with every anomaly minus the step
    with every anomaly but that one (same seed: the same job otherwise), and alone (on a healthy job)."""
    healthy = simulate(cfg.without()).step_time_ns() if cfg.anomalies else observed_ns
    out = []
    for a in cfg.anomalies:
        without = simulate(cfg.without(a)).step_time_ns() if len(cfg.anomalies) > 1 else healthy
        alone = (
            simulate(dataclasses.replace(cfg, anomalies=(a,))).step_time_ns() if len(cfg.anomalies) > 1 else observed_ns
        )
        d, s, _, m = cfg.coords4(a.rank)
        out.append(
            {
                "kind": a.kind,
                "rank": a.rank,
                "value": a.value,
                "at": a.at,
                "label": a.label(),
                "dp": d,
                "pp": s,
                "mp": m,
                "cost_ns_per_step": observed_ns - without,
                "alone_cost_ns_per_step": alone - healthy,
                "step_without_ns": without,
            }
        )
    return {
        "healthy_step_ns": healthy,
        "step_ns": observed_ns,
        "joint_cost_ns_per_step": observed_ns - healthy,
        "anomalies": out,
    }


class Truth:
    def __init__(self, data: dict):
        self.data = data
        self.ranks: List[dict] = data["ranks"]
        self.instances: List[dict] = data["instances"]
        self.anomalies: List[dict] = data["anomalies"]
        self.config: dict = data["config"]

    @property
    def healthy_step_ns(self) -> float:
        return self.data["healthy_step_ns"]

    @property
    def step_ns(self) -> float:
        return self.data["step_ns"]

    def by_file(self) -> Dict[str, dict]:
        return {r["file"]: r for r in self.ranks}


def save(data: dict, out_dir: str) -> str:
    path = os.path.join(out_dir, TRUTH_FILE)
    with open(path, "w") as f:
        json.dump(data, f, default=_plain)
    return path


def load(out_dir: str) -> Truth:
    with open(os.path.join(out_dir, TRUTH_FILE)) as f:
        return Truth(json.load(f))


def _plain(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(type(x))
