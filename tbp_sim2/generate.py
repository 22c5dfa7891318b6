"""Run the simulation, write one Paddle trace per rank and the truth beside them."""

from __future__ import annotations

import dataclasses
import glob
import os
import time
from typing import Dict, List, Optional

import numpy as np

from .config import SimConfig
from .engine import Engine, simulate
from .trace import EPOCH_NS, file_name, write_rank
from .truth import costs, instances, save


def hosts_and_clocks(cfg: SimConfig) -> List[dict]:
    """Per rank: coordinates, host, host name, local GPU, pid, its host's clock offset (ns) and drift
    (ppm). Host names are in Fleet's host order unless shuffle_hosts."""
    rng = np.random.default_rng([cfg.seed, 31337])
    nh, gph = cfg.n_hosts, cfg.gpus_per_host
    if cfg.host_offsets_ms is not None:
        offsets = [o * 1e6 for o in cfg.host_offsets_ms]
    else:
        offsets = list(rng.uniform(-cfg.clock_skew_ms, cfg.clock_skew_ms, nh) * 1e6)
    drift = list(rng.uniform(-cfg.drift_ppm, cfg.drift_ppm, nh)) if cfg.drift_ppm else [0.0] * nh
    order = list(range(nh))
    if cfg.shuffle_hosts:
        rng.shuffle(order)
    names = ["%s%d" % (cfg.host_prefix, order[h] + 1) for h in range(nh)]
    pids = rng.choice(np.arange(10_000, 99_000), size=cfg.world, replace=False)
    out = []
    for r in range(cfg.world):
        d, s, sh, m = cfg.coords4(r)
        h = r // gph
        worker = ("host_%spid_%d" % (names[h], pids[r])) if cfg.names == "default" else "rank%d" % r
        out.append(
            {
                "rank": r,
                "dp": d,
                "pp": s,
                "mp": m,
                "sharding": sh,
                "host": h,
                "hostname": names[h],
                "gpu": r % gph,
                "pid": int(pids[r]),
                "worker": worker,
                "clock_offset_ns": float(offsets[h]),
                "drift_ppm": float(drift[h]),
            }
        )
    return out


def _to_local(info: dict):
    off, drift = info["clock_offset_ns"], info["drift_ppm"] * 1e-6

    def f(g: np.ndarray) -> np.ndarray:
        return np.floor(g + off + drift * g).astype(np.int64) + EPOCH_NS

    return f


def write_traces(eng: Engine, ranks: List[dict], out_dir: str, only: Optional[List[int]] = None) -> Dict[int, str]:
    cfg = eng.cfg
    os.makedirs(out_dir, exist_ok=True)
    if only is None:  # a fresh run: the folder's earlier traces would be read with it
        for old in glob.glob(os.path.join(out_dir, "*.paddle_trace.json")):
            os.remove(old)
    paths = {}
    for info in ranks:
        r = info["rank"]
        if only is not None and r not in only:
            continue
        st = eng.stages[info["pp"]]
        lane = cfg.coords(info["rank"])[0] * cfg.mp + info["mp"]
        to_local = _to_local(info)
        end_local = int(to_local(np.array([st.e_end[:, lane].max()]))[0])
        name = file_name(info["worker"], end_local + 80_000_000 + 997 * r)
        tmp = os.path.join(out_dir, "." + name + ".part")
        with open(tmp, "w") as f:
            write_rank(f, st, lane, to_local, info["pid"], info["gpu"], cfg.warmup)
        path = os.path.join(out_dir, name)
        os.replace(tmp, path)
        info["file"] = name
        paths[r] = path
    return paths


def generate(cfg: SimConfig, out_dir: str, with_costs: bool = True, log=None) -> dict:
    """Simulate ``cfg``, write its traces and ``sim2_truth.json`` into ``out_dir``; returns the truth."""
    t = time.time()
    eng = simulate(cfg)
    if log:
        log("simulated %d ranks in %.1f s" % (cfg.world, time.time() - t))
    ranks = hosts_and_clocks(cfg)
    t = time.time()
    write_traces(eng, ranks, out_dir)
    if log:
        log("wrote %d traces in %.1f s" % (cfg.world, time.time() - t))
    observed = eng.step_time_ns()
    b = eng.step_bounds()
    t_mid = float((b[:, 0, 0].min() + b[:, -1, 1].max()) / 2)
    for info in ranks:
        info["clock_offset_mid_ns"] = info["clock_offset_ns"] + info["drift_ppm"] * 1e-6 * t_mid
    data = {
        "config": _config_dict(cfg),
        "ranks": ranks,
        "instances": instances(eng),
        "first_step": cfg.warmup,
        "steps": cfg.steps,
    }
    if with_costs:
        t = time.time()
        data.update(costs(cfg, observed))
        if log:
            log("costs in %.1f s" % (time.time() - t))
    else:
        data.update(
            {"healthy_step_ns": None, "step_ns": observed, "anomalies": [dataclasses.asdict(a) for a in cfg.anomalies]}
        )
    save(data, out_dir)
    return data


def _config_dict(cfg: SimConfig) -> dict:
    d = dataclasses.asdict(cfg)
    d["world"], d["n_hosts"], d["gpus_per_host"] = cfg.world, cfg.n_hosts, cfg.gpus_per_host
    return d
