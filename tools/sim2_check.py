"""The cross-rank analysis against tbp_sim2's truth: run the tool on each simulated run folder the way a
user would (summarize_file, digest_of, analyze_run, analyze_whatif) and print what it found beside
what the simulator planted (docs/sim2.md).

    python tools/sim2_check.py DIR [DIR ...] [--jobs N] [--json OUT.json] [-v]

Per run: the share of truth instances matched with their exact members (and per kind), instances the
tool made that are not in the truth, coordinates right, the topology, the largest clock error, the
ranks the verdict names with their cost against the planted costs, the what-if "straggler at its
peers' speed" against the true saving, and the unchanged replay against the observed step.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tb_paddle_profile.analysis.collectives import KIND_LABELS  # noqa: E402
from tb_paddle_profile.analysis.crossrank import analyze_run  # noqa: E402
from tb_paddle_profile.analysis.crossrank.whatif import analyze_whatif  # noqa: E402
from tb_paddle_profile.analysis.digest import digest_of  # noqa: E402
from tb_paddle_profile.analysis.summarize import summarize_file  # noqa: E402
from tb_paddle_profile.v1 import whatif_pb2 as wpb  # noqa: E402
from tbp_sim2.truth import load  # noqa: E402


def _digest(path):
    return digest_of(summarize_file(path))


def digests(folder: str, jobs: int = 1):
    paths = sorted(glob.glob(os.path.join(folder, "*.paddle_trace.json")))
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as ex:
            return list(ex.map(_digest, paths, chunksize=4))
    return [_digest(p) for p in paths]


def _ms(ns) -> str:
    return "%.2f ms" % (ns / 1e6)


def compare(folder: str, jobs: int = 1, whatif: bool = True) -> dict:
    truth = load(folder)
    t0 = time.time()
    ds = digests(folder, jobs)
    t_parse = time.time() - t0
    name = os.path.basename(folder.rstrip("/"))
    t0 = time.time()
    rp = analyze_run(ds, run=name, span="0")
    t_an = time.time() - t0
    by_file = truth.by_file()
    to_true = {r.rank: by_file[r.file_name]["rank"] for r in rp.ranks}
    res: dict = {"run": name, "ranks": len(truth.ranks), "parse_s": round(t_parse, 1), "analyze_s": round(t_an, 2)}

    # instances
    want = {}
    for i in truth.instances:
        want[(i["step"], i["kind"], frozenset((m["rank"], m["ordinal"]) for m in i["members"]))] = i
    got = set()
    for m in rp.matched:
        got.add((m.step, KIND_LABELS.get(m.kind, "other"), frozenset((to_true[x.rank], x.ordinal) for x in m.members)))
    hit = set(want) & got
    res["instances"] = len(want)
    res["exact"] = len(hit) / max(1, len(want))
    res["extra"] = len(got - set(want))
    kinds = {}
    for key, i in want.items():
        k = "%s/%s" % (i["kind"], i["axis"])
        a = kinds.setdefault(k, [0, 0])
        a[0] += 1
        a[1] += key in hit
    res["by_kind"] = {k: "%d/%d" % (v[1], v[0]) for k, v in sorted(kinds.items())}

    def show(key):
        return "step %d %s %s" % (key[0], key[1], sorted(key[2])[:6])

    res["missing_examples"] = [show(k) + " (%s)" % want[k]["axis"] for k in sorted(set(want) - hit, key=str)[:4]]
    res["extra_examples"] = [show(k) for k in sorted(got - set(want), key=str)[:4]]

    # coordinates, topology
    cfg = truth.config
    sh_deg = int(cfg.get("sharding", 1))
    pairs = []
    for r in rp.ranks:
        t = truth.ranks[to_true[r.rank]]
        # a degree of 1: the tool may say -1 (not pipelined, no MP) for coordinate 0
        ours = tuple(
            0 if (x == -1 and n == 1) else x
            for x, n in ((r.dp, cfg["dp"]), (r.pipeline_stage, cfg["pp"]), (r.mp, cfg["mp"]))
        )
        if sh_deg > 1:  # the sharding index after the others
            ours = ours + (r.sharding,)
        pairs.append((t, ours))
    # default worker names on shuffled hosts tell no replica's number: dp is held up to one relabelling
    relabel = {}
    if cfg["names"] == "default" and cfg["shuffle_hosts"]:
        votes = collections.Counter((o[0], t["dp"]) for t, o in pairs)
        for (a, b), _ in votes.most_common():
            if a not in relabel and b not in relabel.values():
                relabel[a] = b
    right, wrong = 0, []
    for t, ours in pairs:
        ours = (relabel.get(ours[0], ours[0]),) + ours[1:]
        want_c = (t["dp"], t["pp"], t["mp"]) + ((t.get("sharding", 0),) if sh_deg > 1 else ())
        ok = ours == want_c
        right += ok
        if not ok and len(wrong) < 4:
            wrong.append("r%d %s vs %s" % (t["rank"], ours, want_c))
    res["coords"] = "%d/%d%s" % (right, len(rp.ranks), " (dp relabelled)" if relabel else "")
    res["coords_wrong"] = wrong
    tv = rp.topology
    res["topology"] = "%dx%dx%d%s%s" % (
        tv.dp,
        tv.pp,
        tv.mp,
        " sharding %d" % tv.sharding if tv.sharding > 1 else "",
        "" if tv.complete else " (incomplete)",
    )
    res["topology_ok"] = (tv.dp, tv.pp, tv.mp, max(1, tv.sharding)) == (
        cfg["dp"],
        cfg["pp"],
        cfg["mp"],
        sh_deg,
    ) and tv.complete

    # clocks: each rank's estimated offset against the truth, relative to the tool's reference
    refs = [r for r in rp.ranks if r.clock_offset_ns == 0]
    if refs and len(set(t["host"] for t in truth.ranks)) > 1:
        ref_true = truth.ranks[to_true[refs[0].rank]]["clock_offset_mid_ns"]
        errs = [
            abs(r.clock_offset_ns - (truth.ranks[to_true[r.rank]]["clock_offset_mid_ns"] - ref_true)) for r in rp.ranks
        ]
        res["clock_max_err_us"] = max(errs) / 1e3
    else:
        res["clock_max_err_us"] = None

    # verdict
    v = rp.straggler
    planted = {a["rank"]: a for a in truth.anomalies}
    named = []
    for s in v.stragglers:
        tr = to_true[s.rank]
        named.append(
            {
                "rank": tr,
                "cost_ms": s.job_cost_ns / 1e6,
                "cause": s.cause,
                "absorbed": s.absorbed,
                "planted": tr in planted,
            }
        )
    res["verdict"] = {"found": v.found, "uncertain": v.uncertain, "named": named, "summary": v.summary}
    res["planted"] = [
        {
            "rank": a["rank"],
            "kind": a["kind"],
            "stage": a["pp"],
            "cost_ms": a["cost_ns_per_step"] / 1e6,
            "alone_ms": a["alone_cost_ns_per_step"] / 1e6,
        }
        for a in truth.anomalies
    ]
    res["healthy_step_ms"] = truth.healthy_step_ns / 1e6 if truth.healthy_step_ns else None
    res["step_ms"] = truth.step_ns / 1e6
    res["anomaly_findings"] = [
        (sorted(to_true[x] for x in f.ranks)[:8], f.rule, f.cost_ns / 1e6)
        for f in rp.findings
        if f.category == "anomaly"
    ][:6]

    if whatif:
        t0 = time.time()
        w = analyze_whatif(ds, run=name, span="0")
        res["whatif_s"] = round(time.time() - t0, 2)
        cp = w.critical_path
        res["replay"] = {
            "observed_ms": cp.observed_step_ns / 1e6,
            "replayed_ms": cp.replayed_step_ns / 1e6,
            "error": cp.replay_error,
            "truth_step_ms": truth.step_ns / 1e6,
        }
        (x,) = [x for x in w.what_ifs if x.kind == wpb.WHAT_IF_STRAGGLER]
        tr = to_true.get(x.rank, -1) if x.applicable else None
        true_saving = planted[tr]["cost_ns_per_step"] if tr in planted else 0.0
        res["whatif"] = {
            "applicable": x.applicable,
            "rank": tr,
            "saving_ms": x.saving_ns / 1e6,
            "true_saving_ms": true_saving / 1e6,
            "reason": x.reason,
        }
    return res


def row(res: dict) -> str:
    v = res["verdict"]
    named = (
        ", ".join("r%d %.2f%s" % (n["rank"], n["cost_ms"], "" if n["planted"] else "(healthy)") for n in v["named"][:4])
        or "none"
    )
    if len(v["named"]) > 4:
        named += " +%d more" % (len(v["named"]) - 4)
    if v["uncertain"]:
        named += " [uncertain]"
    truth = ", ".join("r%d %.2f" % (p["rank"], p["cost_ms"]) for p in res["planted"]) or "none"
    clk = "-" if res["clock_max_err_us"] is None else "%.1f us" % res["clock_max_err_us"]
    wi = res.get("whatif", {})
    if wi:
        wtxt = (
            ("r%s %.2f vs %.2f" % (wi["rank"], wi["saving_ms"], wi["true_saving_ms"]))
            if wi["applicable"]
            else "n/a (%s)" % wi["reason"][:40]
        )
        rep = res["replay"]
        rtxt = "%.2f/%.2f (%.1f%%)" % (rep["replayed_ms"], rep["observed_ms"], 100 * rep["error"])
    else:
        wtxt = rtxt = "-"
    return "| %s | %.1f%% (+%d) | %s | %s | %s | %s | %s | %s | %s |" % (
        res["run"],
        100 * res["exact"],
        res["extra"],
        res["coords"],
        res["topology"],
        clk,
        named,
        truth,
        wtxt,
        rtxt,
    )


HEADER = (
    "| run | exact (extra) | coords | topology | clock max err | verdict: named, ms/step | truth, ms/step | "
    "what-if saving vs true, ms | replay/observed ms |\n|---|---|---|---|---|---|---|---|---|"
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--no-whatif", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    results = []
    for d in a.dirs:
        res = compare(d, a.jobs, whatif=not a.no_whatif)
        results.append(res)
        if a.verbose:
            print(json.dumps(res, indent=1, default=str), file=sys.stderr)
    print(HEADER)
    for res in results:
        print(row(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
