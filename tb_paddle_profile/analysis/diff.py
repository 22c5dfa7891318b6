"""What changed between two runs (or ranks): the change in step time split into parts that add up to it.

One rank's step (``ParallelStep``, docs/distributed.md) is split exactly on its device timeline:
compute + exposed communication + exposed memcpy/memset + idle = the ProfileStep's duration. The exposed
communication is split further, per rank, from its per-step figures and its matched collectives
(``RankParallel``), so that the parts still add up to the step:

* **bubble** = the exposed send/recv time (``bubble_ns``: the stage waits for a pipeline neighbour), at most
  the exposed communication;
* **waiting** (for late peers, stragglers included) = Σ over the other kinds of min(wait at the kind's matched
  collectives, the kind's exposed time), at most what the bubble leaves of the exposed communication;
* **exposed <kind>** (all-reduce, all-gather, ...): the rest of the exposed communication, shared among the
  kinds in proportion to each kind's exposed time beyond its wait (kinds can overlap each other on the
  device, so their own exposed times may add up to more than the union: the shares add up to the union);
  without any such kind the rest is "other".

Parts are per-step means (each rank: its totals over its steps ÷ its steps), so runs with different step
counts compare; a run's part is the mean over its ranks. The change of each part is candidate − baseline,
and the parts' changes add up to the change of the mean step time (the last part takes the last rounding).
Ranks are aligned by role: (pipeline stage, model-parallel index), then the data-parallel index; see
docs/diff.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..v1 import plugin_pb2 as ppb
from ..v1 import summary_pb2 as pb

SEND_RECV = pb.COLLECTIVE_KIND_SEND_RECV
KIND_NAMES: Dict[int, str] = {
    pb.COLLECTIVE_KIND_ALL_REDUCE: "all-reduce",
    pb.COLLECTIVE_KIND_ALL_GATHER: "all-gather",
    pb.COLLECTIVE_KIND_REDUCE_SCATTER: "reduce-scatter",
    pb.COLLECTIVE_KIND_BROADCAST: "broadcast",
    pb.COLLECTIVE_KIND_ALL_TO_ALL: "all-to-all",
    pb.COLLECTIVE_KIND_OTHER: "other communication",
}
KIND_KEYS: Dict[int, str] = {
    pb.COLLECTIVE_KIND_ALL_REDUCE: "all_reduce",
    pb.COLLECTIVE_KIND_ALL_GATHER: "all_gather",
    pb.COLLECTIVE_KIND_REDUCE_SCATTER: "reduce_scatter",
    pb.COLLECTIVE_KIND_BROADCAST: "broadcast",
    pb.COLLECTIVE_KIND_ALL_TO_ALL: "all_to_all",
    pb.COLLECTIVE_KIND_OTHER: "other",
}
# The parts in the order they are listed (exposed.* in CollectiveKind order).
PART_ORDER = (
    ["compute"] + [f"exposed.{KIND_KEYS[k]}" for k in sorted(KIND_KEYS)] + ["waiting", "bubble", "memcpy", "idle"]
)
PART_LABELS = dict(
    [
        ("compute", "compute"),
        ("exposed_communication", "exposed communication"),
        ("waiting", "waiting for late peers"),
        ("bubble", "pipeline bubble"),
        ("memcpy", "exposed memcpy/memset"),
        ("idle", "idle"),
    ]
    + [(f"exposed.{KIND_KEYS[k]}", f"exposed {KIND_NAMES[k]}") for k in KIND_KEYS]
)


def part_label(key: str) -> str:
    return PART_LABELS.get(key, key)


def step_parts(steps: Sequence[pb.ParallelStep], kind_waits: Optional[Mapping[int, int]] = None) -> Dict[str, float]:
    """One rank's parts, per-step means in ns, from its ParallelSteps and (when the rank's collectives were
    matched across ranks) the total wait per kind over those steps (RankKind.wait_ns). Their sum is the mean
    ProfileStep duration. Empty for no steps."""
    n = len(steps)
    if n == 0:
        return {}
    compute = sum(s.compute_ns for s in steps)
    exposed = sum(s.exposed_communication_ns for s in steps)
    memcpy = sum(s.exposed_memory_ns for s in steps)
    idle = sum(s.idle_ns for s in steps)
    by_kind: Dict[int, int] = {}
    for s in steps:
        for k in s.kinds:
            by_kind[k.kind] = by_kind.get(k.kind, 0) + k.exposed_ns
    bubble = min(by_kind.get(SEND_RECV, 0), exposed)
    waits = {k: min(max(0, (kind_waits or {}).get(k, 0)), v) for k, v in by_kind.items() if k != SEND_RECV}
    waiting = min(sum(waits.values()), exposed - bubble)
    rest = exposed - bubble - waiting
    transfer = {k: max(0, by_kind[k] - waits[k]) for k in waits}
    weights = transfer if sum(transfer.values()) > 0 else {k: v for k, v in by_kind.items() if k != SEND_RECV}
    total_weight = sum(weights.values())
    out: Dict[str, float] = {"compute": compute / n}
    if total_weight > 0:
        for k in sorted(weights):
            out[f"exposed.{KIND_KEYS.get(k, 'other')}"] = rest * weights[k] / total_weight / n
    elif rest:
        out["exposed.other"] = rest / n
    out.update(waiting=waiting / n, bubble=bubble / n, memcpy=memcpy / n, idle=idle / n)
    return out


def step_time(steps: Sequence[pb.ParallelStep]) -> float:
    """Mean ProfileStep duration (ns), the quantity the parts add up to."""
    return sum(s.range.end_ns - s.range.start_ns for s in steps) / len(steps) if steps else 0.0


def rank_parts(rank: ppb.RankParallel) -> Dict[str, float]:
    """The parts of one rank of a cross-rank analysis (its waits from the matched collectives)."""
    return step_parts(rank.step_breakdown, {k.kind: k.wait_ns for k in rank.kinds})


def _mean(parts: Iterable[Mapping[str, float]]) -> Dict[str, float]:
    parts = list(parts)
    keys = {k for p in parts for k in p}
    return {k: sum(p.get(k, 0.0) for p in parts) / len(parts) for k in keys} if parts else {}


def ordered_keys(*sides: Mapping[str, float]) -> List[str]:
    keys = {k for side in sides for k in side}
    return [k for k in PART_ORDER if k in keys] + sorted(keys - set(PART_ORDER))


@dataclass
class Group:
    """The parts of one aligned group (the whole run, a stage, a role, a rank) on both sides; None on a side
    where the group does not exist."""

    key: str
    label: str
    baseline: Optional[Dict[str, float]]
    candidate: Optional[Dict[str, float]]
    baseline_ranks: int = 0
    candidate_ranks: int = 0
    link_baseline: str = ""  # a worker of the group on each side (the timeline to open)
    link_candidate: str = ""

    def step(self, side: str) -> Optional[float]:
        parts = getattr(self, side)
        return None if parts is None else sum(parts.values())

    def delta(self, key: str) -> Optional[float]:
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate.get(key, 0.0) - self.baseline.get(key, 0.0)

    def change(self) -> Optional[float]:
        if self.baseline is None or self.candidate is None:
            return None
        return sum(self.candidate.values()) - sum(self.baseline.values())  # (the sides' step)


@dataclass
class Decomposition:
    """The change in step time of two sides, split into parts (see the module docstring)."""

    keys: List[str]
    total: Group
    stages: List[Group] = field(default_factory=list)
    ranks: List[Group] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    # Per ProfileStep number: the mean over the ranks of that step's exact four-way split (compute, exposed
    # communication, exposed memcpy, idle; their sum is the step's duration). Waits are known per rank, not
    # per step, so the finer parts are for the means only.
    steps: List[Group] = field(default_factory=list)

    @property
    def change(self) -> float:
        return self.total.change() or 0.0

    def deltas(self) -> Dict[str, Optional[float]]:
        return {k: self.total.delta(k) for k in self.keys}

    def largest(self) -> Tuple[str, Optional[float]]:
        """The part that changed most (by absolute change) and its change (None: a side is missing)."""
        d = self.deltas()
        key = max(self.keys, key=lambda k: abs(d[k] or 0.0))
        return key, d[key]


def _close_total(parts: Dict[str, float], target: float, keys: Sequence[str]) -> None:
    """Make the parts add up to ``target`` in floating point: the largest part takes the last rounding."""
    if not parts:
        return
    big = max(keys, key=lambda k: abs(parts.get(k, 0.0)))
    parts[big] = parts.get(big, 0.0) + (target - sum(parts.values()))


def _role(r: ppb.RankParallel) -> Tuple:
    if r.pipeline_stage < 0 and r.mp < 0:
        return ("rank", r.rank)
    return ("role", r.pipeline_stage, r.mp)


def _role_label(role: Tuple) -> str:
    if role[0] == "rank":
        return f"rank {role[1]}"
    stage, mp = role[1], role[2]
    parts = [f"stage {stage}" if stage >= 0 else "", f"mp{mp}" if mp >= 0 else ""]
    return " ".join(p for p in parts if p) or "all ranks"


def _verdict(rp: ppb.RunParallel) -> str:
    """The run's named ranks and their cost per step, in a few words."""
    v = rp.straggler
    if not v.stragglers:
        return "no straggler"
    named = ", ".join(
        f"rank {s.rank} {s.job_cost_ns / 1e6:.3g} ms per step{' (absorbed)' if s.absorbed else ''}"
        for s in list(v.stragglers)[:4]
    )
    more = f" and {len(v.stragglers) - 4} more" if len(v.stragglers) > 4 else ""
    return ("possibly " if v.uncertain else "") + named + more


def decompose_runs(baseline: ppb.RunParallel, candidate: ppb.RunParallel) -> Decomposition:
    """The two runs' step-time change, per run, stage, role and rank (aligned as docs/diff.md says)."""
    sides = {"baseline": baseline, "candidate": candidate}
    per_rank = {
        name: [(r, rank_parts(r), step_time(r.step_breakdown)) for r in rp.ranks if r.step_breakdown]
        for name, rp in sides.items()
    }
    notes: List[str] = []
    totals = {}
    for name, rows in per_rank.items():
        parts = _mean(p for _, p, _ in rows)
        step = sum(s for _, _, s in rows) / len(rows) if rows else 0.0
        totals[name] = parts
        _close_total(parts, step, list(parts))
    keys = ordered_keys(totals["baseline"], totals["candidate"])
    total = Group(
        "run",
        "all ranks",
        totals["baseline"],
        totals["candidate"],
        len(per_rank["baseline"]),
        len(per_rank["candidate"]),
    )

    b_n, c_n = len(per_rank["baseline"]), len(per_rank["candidate"])
    steps = {name: sorted({len(r.step_breakdown) for r, _, _ in rows}) for name, rows in per_rank.items()}
    notes.append(
        f"Step times are per-step means: each rank's totals over its steps ÷ its steps "
        f"(baseline {_counts(steps['baseline'])}, candidate {_counts(steps['candidate'])} steps per rank); "
        f"a run's figure is the mean over its ranks (baseline {b_n}, candidate {c_n})."
    )
    if b_n != c_n:
        notes.append(
            f"The runs have different numbers of ranks ({b_n} and {c_n}): stages and roles are compared "
            "by their means over the ranks of each role; ranks without a counterpart are marked new or "
            "removed."
        )
    topo = {name: _topology(rp) for name, rp in sides.items()}
    if topo["baseline"] != topo["candidate"]:
        notes.append(
            f"The topologies differ (baseline {topo['baseline']}, candidate {topo['candidate']}): ranks are "
            "aligned by role (pipeline stage, model-parallel index), then data-parallel index."
        )
    else:
        notes.append(
            f"Ranks are aligned by role (pipeline stage, model-parallel index, data-parallel index; "
            f"{topo['baseline']})."
        )

    verdicts = [f"the {name}'s: {_verdict(rp)}" for name, rp in sides.items()]
    notes.append(
        "The straggler verdicts (each rank's cost to the job, its replay at its role peers' speed, the "
        "same as in the Distributed and What-if views): " + "; ".join(verdicts) + "."
    )

    def groups(keyfn, labelfn) -> List[Group]:
        by: Dict[Tuple, Dict[str, list]] = {}
        for name, rows in per_rank.items():
            for r, p, s in rows:
                by.setdefault(keyfn(r), {"baseline": [], "candidate": []})[name].append((r, p, s))
        out = []
        for key in sorted(by, key=lambda k: tuple((0, x) if isinstance(x, int) else (1, str(x)) for x in k)):
            sides_ = by[key]
            parts = {}
            for name, rows in sides_.items():
                if rows:
                    parts[name] = _mean(p for _, p, _ in rows)
                    _close_total(parts[name], sum(s for _, _, s in rows) / len(rows), list(parts[name]))
            out.append(
                Group(
                    repr(key),
                    labelfn(key, sides_),
                    parts.get("baseline"),
                    parts.get("candidate"),
                    len(sides_["baseline"]),
                    len(sides_["candidate"]),
                    sides_["baseline"][0][0].worker if sides_["baseline"] else "",
                    sides_["candidate"][0][0].worker if sides_["candidate"] else "",
                )
            )
        return out

    stages = groups(lambda r: (r.pipeline_stage,), lambda k, s: f"stage {k[0]}" if k[0] >= 0 else "no stage")
    if len(stages) == 1 and stages[0].label == "no stage":
        stages = []
    ranks = groups(lambda r: _role(r) + (r.dp if r.dp >= 0 else r.rank,), lambda k, s: _rank_label(k, s))
    return Decomposition(
        keys,
        total,
        stages,
        ranks,
        notes,
        per_step({name: [r.step_breakdown for r, _, _ in rows] for name, rows in per_rank.items()}, notes),
    )


STEP_PARTS = ("compute", "exposed_communication", "memcpy", "idle")


def per_step(
    sides: Mapping[str, Sequence[Sequence[pb.ParallelStep]]], notes: Optional[List[str]] = None
) -> List[Group]:
    """Per ProfileStep, both sides' mean over their ranks of the step's four-way split. Steps are aligned by
    their number when the two sides share any; otherwise (a run profiled from another step) by their order
    within each rank, and ``notes`` gets a sentence saying so."""
    numbers = {name: {st.step for steps in ranks for st in steps} for name, ranks in sides.items()}
    by_order = not (numbers["baseline"] & numbers["candidate"]) and all(numbers.values())
    by: Dict[int, Dict[str, list]] = {}
    for name, ranks in sides.items():
        for steps in ranks:
            for i, st in enumerate(steps):
                by.setdefault(i if by_order else st.step, {"baseline": [], "candidate": []})[name].append(st)
    if notes is not None and all(numbers.values()) and numbers["baseline"] != numbers["candidate"]:
        how = (
            "steps are compared by their order"
            if by_order
            else "steps are compared by number; those only one side has are new or removed"
        )
        notes.append(
            f"The sides record different ProfileSteps (baseline {_span(numbers['baseline'])}, candidate "
            f"{_span(numbers['candidate'])}): {how}."
        )
    out = []
    for key in sorted(by):
        parts = {}
        for name, steps in by[key].items():
            if steps:
                n = len(steps)
                parts[name] = {
                    "compute": sum(x.compute_ns for x in steps) / n,
                    "exposed_communication": sum(x.exposed_communication_ns for x in steps) / n,
                    "memcpy": sum(x.exposed_memory_ns for x in steps) / n,
                    "idle": sum(x.idle_ns for x in steps) / n,
                }
        label = f"step {key}"
        if by_order:
            label = "step " + " / ".join(
                str(by[key][name][0].step) if by[key][name] else "-" for name in ("baseline", "candidate")
            )
        out.append(
            Group(
                f"step:{key}",
                label,
                parts.get("baseline"),
                parts.get("candidate"),
                len(by[key]["baseline"]),
                len(by[key]["candidate"]),
            )
        )
    return out


def _span(numbers) -> str:
    numbers = sorted(numbers)
    return f"{numbers[0]}–{numbers[-1]}" if len(numbers) > 1 else str(numbers[0])


def _rank_label(key: Tuple, sides: Mapping[str, list]) -> str:
    names = []
    for name in ("baseline", "candidate"):
        if sides[name]:
            names.append(f"rank {sides[name][0][0].rank}")
    base = _role_label(key[:-1]) if key[0] == "role" else ""
    dp = f"dp{key[-1]}" if key[0] == "role" else ""
    who = names[0] if len(set(names)) == 1 else " / ".join(names)
    return " · ".join(x for x in (who, " ".join(y for y in (base, dp) if y)) if x)


def _counts(values: List[int]) -> str:
    return "–".join(str(v) for v in (values[:1] + values[-1:] if len(values) > 1 else values)) or "0"


def _topology(rp: ppb.RunParallel) -> str:
    t = rp.topology
    if t.dp or t.mp or t.pp:
        return f"dp{t.dp or 1} × mp{t.mp or 1} × pp{t.pp or 1}"
    return f"{len(rp.ranks)} ranks, no topology"


def decompose_ranks(baseline: pb.Summary, candidate: pb.Summary) -> Decomposition:
    """Two single ranks' step-time change from their own Summaries (no cross-rank matching, so no waiting
    part: time at collectives is the kinds' exposed time)."""
    parts, steps = {}, {}
    for name, s in (("baseline", baseline), ("candidate", candidate)):
        st = [x for x in s.parallel.steps]
        parts[name] = step_parts(st)
        steps[name] = len(st)
        _close_total(parts[name], step_time(st), list(parts[name]))
    keys = ordered_keys(parts["baseline"], parts["candidate"])
    total = Group("rank", "rank", parts["baseline"] or None, parts["candidate"] or None, 1, 1)
    notes = [
        f"Per-step means over each rank's own steps (baseline {steps['baseline']}, candidate "
        f"{steps['candidate']}). Without the other ranks no wait is known: time at collectives counts as "
        "their exposed time."
    ]
    steps_ = per_step({"baseline": [baseline.parallel.steps], "candidate": [candidate.parallel.steps]}, notes)
    return Decomposition(keys, total, notes=notes, steps=steps_)
