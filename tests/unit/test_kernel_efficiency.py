"""Kernel efficiency (docs/kernel-efficiency.md): Tensor Core use, estimated SM efficiency and time-weighted
achieved occupancy, per kernel and for the whole rank.

Expected values come from what we did not write: the GPU-shaped trace's own JSON (its kernel events'
durations, grids, occupancies and deviceProperties' smCount, read here with the json module), and the
generator's planted kernels (tbp_synth's catalogue of launch configurations, the device it simulates and its
own occupancy formula). The browser test checks that the Kernels panel and the Overview draw the new
columns and table with the Python formatter's strings.
"""

from __future__ import annotations

import collections
import json
import re
import shutil
from pathlib import Path

import pytest

from tb_paddle_profile.analysis.kernels import TENSOR_CORE_RULES, is_tensor_core
from tb_paddle_profile.analysis import recommendations as R
from tb_paddle_profile.present.display.cells import format_cell, sentence_text
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.summary import find_table, summary_display
from tb_paddle_profile.analysis.summarize import summarize_file

from support.paths import SHARED_TRACES

GPU_RUN = SHARED_TRACES / "gpu-synthetic-2rank"
_SUFFIX = re.compile(r"\[[0-9.]+ [a-z]+\]$")


def _traces():
    out = sorted(GPU_RUN.glob("*.paddle_trace.json"))
    if not out:
        pytest.skip("the GPU-shaped traces are not here")
    return out


def _json_kernels(path: Path):
    """{name: [(duration ns, blocks, occupancy %)]} of the trace's kernel events, and {device id: SM count}."""
    d = json.loads(path.read_text())
    sms = {p["id"]: p["smCount"] for p in d["deviceProperties"]}
    caps = {p["id"]: p["computeMajor"] * 10 + p["computeMinor"] for p in d["deviceProperties"]}
    out = collections.defaultdict(list)
    for e in d["traceEvents"]:
        if e.get("cat") != "Kernel":
            continue
        a = e["args"]
        gx, gy, gz = a["grid"]
        out[_SUFFIX.sub("", e["name"])].append(
            (e["dur"] * 1000.0, gx * gy * gz, a["theoretical achieved occupancy %"], e["pid"])
        )
    return out, sms, caps


@pytest.mark.parametrize("trace", _traces(), ids=lambda p: p.name.split("_time_")[0])
def test_gpu_trace_efficiency_against_its_json(trace):
    s = summarize_file(str(trace))
    kernels, sms, caps = _json_kernels(trace)
    assert {k.name for k in s.kernels.kernels} == set(kernels)
    tot = tc = sm_w = occ_w = 0.0
    for k in s.kernels.kernels:
        calls = kernels[k.name]
        assert k.calls == len(calls)
        dur = sum(c[0] for c in calls)
        assert k.gpu.total_ns == pytest.approx(dur, rel=1e-6)
        sm = sum(c[0] * min(1.0, c[1] / sms[c[3]]) for c in calls)
        occ = sum(c[0] * c[2] / 100.0 for c in calls)
        e = k.efficiency
        assert e.sm_efficiency_ns / e.sm_known_ns == pytest.approx(sm / dur, rel=1e-6)
        assert e.occupancy_ns / e.launch_ns == pytest.approx(occ / dur, rel=1e-6)
        # Tensor Cores from the name alone (what the trace says of the kernel: its name and its GPU)
        name_says = "tensorop" in k.name or "xmma" in k.name or "16816" in k.name
        assert (e.tensor_core_ns > 0) == name_says == is_tensor_core(k.name, caps[calls[0][3]])
        tot, tc, sm_w, occ_w = tot + dur, tc + (dur if name_says else 0), sm_w + sm, occ_w + occ
    # the GPU-shaped trace has a CUTLASS tensorop GEMM and NCCL kernels of one block: both sides of each rule
    assert 0 < tc < tot
    assert any(min(1.0, c[1] / sms[c[3]]) < 0.1 for calls in kernels.values() for c in calls)
    r = s.kernels.efficiency
    assert r.total_ns == pytest.approx(tot, rel=1e-6)
    assert r.tensor_core_ns / r.total_ns == pytest.approx(tc / tot, rel=1e-6)
    assert r.sm_efficiency_ns / r.sm_known_ns == pytest.approx(sm_w / tot, rel=1e-6)
    assert r.occupancy_ns / r.launch_ns == pytest.approx(occ_w / tot, rel=1e-6)

    # the display: panel columns of the Kernel Summary (not printed) and the Overview's table
    disp = summary_display(s, time_unit="us")
    table = find_table(disp, "kernels", "kernels")
    keys = [c.key for c in table.columns]
    for key in ("tensor_cores", "sm_efficiency", "achieved_occupancy"):
        assert table.columns[keys.index(key)].text_hidden
    by_name = {k.name: k for k in s.kernels.kernels}
    for row in table.rows:
        if row.depth:
            continue
        k = by_name[row.cells[0].title]
        calls = kernels[k.name]
        dur = sum(c[0] for c in calls)
        texts = {
            key: format_cell(table.columns[keys.index(key)], row.cells[keys.index(key)])
            for key in ("tensor_cores", "sm_efficiency", "achieved_occupancy")
        }
        want_sm = sum(c[0] * min(1.0, c[1] / sms[c[3]]) for c in calls) / dur
        want_occ = sum(c[0] * c[2] / 100.0 for c in calls) / dur
        assert texts == {
            "tensor_cores": "Yes" if by_name[k.name].efficiency.tensor_core_ns else "No",
            "sm_efficiency": "%.1f%%" % (want_sm * 100),
            "achieved_occupancy": "%.1f%%" % (want_occ * 100),
        }
    eff = find_table(disp, "kernel_efficiency", "overview")
    assert eff.text_hidden
    vals = {r.id: format_cell(eff.columns[1], r.cells[1]) for r in eff.rows}
    assert vals == {
        "tensor_cores": "%.1f%%" % (100 * tc / tot),
        "sm_efficiency": "%.1f%%" % (100 * sm_w / tot),
        "achieved_occupancy": "%.1f%%" % (100 * occ_w / tot),
    }


def test_tensor_core_rules_follow_the_architecture():
    # a Hopper-only instruction is not a Tensor Core kernel on an Ampere GPU; a Volta HMMA one is on Hopper
    assert is_tensor_core("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_wgmma", 90)
    assert not is_tensor_core("void foo_wgmma_kernel<float>()", 80)
    assert is_tensor_core("volta_h884gemm_64x64_ldg8_nn", 90)
    assert not is_tensor_core("volta_h884gemm_64x64_ldg8_nn", 61)  # Pascal: no Tensor Cores
    assert is_tensor_core("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn", 80)
    assert not is_tensor_core("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn", 75)
    assert is_tensor_core("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", 80)
    assert not is_tensor_core("ampere_sgemm_128x64_nn", 80)  # fp32 SIMT GEMM
    assert not is_tensor_core("void phi::funcs::VectorizedElementwiseKernel<float>", 0)
    assert all(cc >= 70 for _, cc, _ in TENSOR_CORE_RULES)


# ---------------------------------------------------------------- a generated run with known kernels

TINY = dict(hidden=512, heads=8, seq_len=256, vocab=8192)
# The catalogue entries that are matrix multiplications (cuBLAS sm90_xmma GEMMs, CUTLASS tensorop batched
# GEMMs): the generator times them at its tensor-core rate (_Catalog.TFLOPS). The rest are elementwise,
# reduction and NCCL kernels.
GEMMS = (
    "qkv",
    "qkv_dx",
    "qkv_dw",
    "proj",
    "proj_dx",
    "proj_dw",
    "fc1",
    "fc1_dx",
    "fc1_dw",
    "fc2",
    "fc2_dx",
    "fc2_dw",
    "lm_head",
    "lm_head_dx",
    "lm_head_dw",
    "qk",
    "qk_grad_a",
    "qk_grad_b",
    "av",
    "av_grad_a",
    "av_grad_b",
)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    from tbp_synth import SynthConfig, generate
    from tbp_synth.generator import _Catalog, size_for

    cfg = SynthConfig(dp=1, mp=2, pp=1, steps=1, layers=1, micro_batches=1, **TINY)
    out = tmp_path_factory.mktemp("kernel_eff")
    res = generate(cfg, str(out), ranks=[0])
    return summarize_file(res.traces[0]), _Catalog(size_for(cfg)), Path(res.traces[0])


def test_generated_run_against_the_planted_kernels(generated):
    from tbp_synth.model import DeviceProps
    from tbp_synth.writer import kernel_metrics

    s, cat, _ = generated
    dev = DeviceProps(0)
    gemm_names = {cat.spec[k].name for k in GEMMS}
    specs = collections.defaultdict(set)
    for spec in cat.spec.values():
        specs[spec.name].add(spec)
    by_name = {k.name: k for k in s.kernels.kernels}
    assert gemm_names & set(by_name) and set(by_name) - gemm_names
    checked = 0
    for name, k in by_name.items():
        e = k.efficiency
        assert (e.tensor_core_ns == e.total_ns == k.gpu.total_ns) if name in gemm_names else e.tensor_core_ns == 0, name
        if len(specs.get(name, ())) != 1:
            continue  # a name launched with several configurations: time-weighted, checked on the JSON above
        (spec,) = specs[name]
        blocks = spec.grid[0] * spec.grid[1] * spec.grid[2]
        assert e.sm_efficiency_ns / e.sm_known_ns == pytest.approx(min(1.0, blocks / dev.sm_count), rel=1e-9)
        assert e.occupancy_ns / e.launch_ns == pytest.approx(float(kernel_metrics(spec, dev)[2]), abs=1e-5)
        checked += 1
    assert checked >= 5
    r = s.kernels.efficiency
    tc = sum(k.gpu.total_ns for n, k in by_name.items() if n in gemm_names)
    assert r.tensor_core_ns == tc and r.total_ns == sum(k.gpu.total_ns for k in by_name.values())


def test_generated_run_low_occupancy_recommendation(generated):
    s, cat, path = generated
    # the generator's tiny model launches small grids: most compute kernels are below LOW_OCCUPANCY by the
    # generator's own occupancy formula, recomputed here from the written trace's JSON
    kernels, _, _ = _json_kernels(path)
    total = sum(c[0] for calls in kernels.values() for c in calls)
    low = {
        n: sum(c[0] for c in calls)
        for n, calls in kernels.items()
        if "nccl" not in n.lower()
        and sum(c[0] * c[2] / 100 for c in calls) / sum(c[0] for c in calls) < R.LOW_OCCUPANCY
    }
    assert sum(low.values()) / total >= R.LOW_OCCUPANCY_KERNEL_SHARE
    (rec,) = [r for r in R.recommendations(s) if r.rule.rule == "low_occupancy"]
    assert rec.value == pytest.approx(sum(low.values()) / total, rel=1e-6)
    assert rec.numbers["kernels"] == len(low) and rec.names == [max(low, key=low.get)]
    (sent,) = [x for x in summary_display(s).views[0].sentences if x.key == "recommendation.low_occupancy"]
    assert "%d compute kernels" % len(low) in sentence_text(sent)
    assert "take %.1f%% of the kernel time" % (100 * sum(low.values()) / total) in sentence_text(sent)


# ---------------------------------------------------------------- recommendations


def _trace_json_figures(path: Path):
    d = json.loads(path.read_text())
    by = collections.defaultdict(float)
    for e in d["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat"):
            by[e["cat"]] += e["dur"] * 1000.0
    return by


@pytest.mark.parametrize("trace", _traces(), ids=lambda p: p.name.split("_time_")[0])
def test_gpu_trace_recommendations_against_its_json(trace):
    s = summarize_file(str(trace))
    f = _trace_json_figures(trace)
    step = f["ProfileStep"]
    got = {r.rule.rule: r for r in R.recommendations(s)}
    # the data loader: 600 us of each 5 ms step in this trace
    assert f["Dataloader"] / step >= R.DATALOADER_FRACTION
    assert got["dataloader_bound"].value == pytest.approx(f["Dataloader"] / step, rel=1e-9)
    # memcpy and memset, CUDA runtime calls: far below their thresholds here
    assert (f["Memcpy"] + f["Memset"]) / step < R.MEMCPY_FRACTION and "memcpy_heavy" not in got
    assert f["CudaRuntime"] / step < min(R.LAUNCH_BOUND_FRACTION, R.SYNC_FRACTION)
    assert "launch_bound" not in got and "sync_heavy" not in got
    # kernels at 50% occupancy (the JSON's "theoretical achieved occupancy %"): not low
    kernels, _, _ = _json_kernels(trace)
    assert all(c[2] >= 100 * R.LOW_OCCUPANCY for calls in kernels.values() for c in calls)
    assert "low_occupancy" not in got
    (sent,) = [x for x in summary_display(s, time_unit="us").views[0].sentences if x.key.startswith("recommendation.")]
    want = "%.2f us of the %.2f us step (%.1f%%; threshold %.1f%%)" % (
        f["Dataloader"] / 2 / 1000,
        step / 2 / 1000,
        100 * f["Dataloader"] / step,
        100 * R.DATALOADER_FRACTION,
    )
    assert want in sentence_text(sent, "us"), sentence_text(sent, "us")


def _hand_summary(step_ns=1_000_000, **per_step) -> pb.Summary:
    s = pb.Summary()
    s.meta.total_time_ns = 2 * step_ns
    for i in range(2):
        st = s.parallel.steps.add(step=i + 1)
        st.range.start_ns, st.range.end_ns = i * step_ns, (i + 1) * step_ns
        for k, v in per_step.items():
            setattr(st, k, v)
    return s


@pytest.mark.parametrize(
    "rule,field,threshold",
    [
        ("dataloader_bound", "dataloader_ns", R.DATALOADER_FRACTION),
        ("sync_heavy", "sync_ns", R.SYNC_FRACTION),
        ("memcpy_heavy", "memory_ns", R.MEMCPY_FRACTION),
        ("launch_bound", "runtime_ns", R.LAUNCH_BOUND_FRACTION),
    ],
)
def test_each_rule_fires_at_its_threshold(rule, field, threshold):
    at = int(round(threshold * 1_000_000))
    fired = {r.rule.rule for r in R.recommendations(_hand_summary(**{field: at}))}
    assert rule in fired
    assert rule not in {r.rule.rule for r in R.recommendations(_hand_summary(**{field: at - 1}))}
    text = " ".join(sentence_text(x, "us") for x in summary_display(_hand_summary(**{field: at})).views[0].sentences)
    assert "%.1f%%" % (100 * threshold) in text


def test_launch_bound_leaves_synchronisations_out():
    # 60% of the step in runtime calls, 20% of it synchronising: 40% launches, below the 50% threshold
    got = {r.rule.rule for r in R.recommendations(_hand_summary(runtime_ns=600_000, sync_ns=200_000))}
    assert "launch_bound" not in got and "sync_heavy" in got


def test_thresholds_are_one_table():
    assert [r.rule for r in R.RULES] == [
        "dataloader_bound",
        "launch_bound",
        "sync_heavy",
        "memcpy_heavy",
        "low_occupancy",
    ]
    from tb_paddle_profile.analysis.crossrank import thresholds as T

    assert R.LAUNCH_BOUND_FRACTION == T.LAUNCH_BOUND_RUNTIME_FRACTION and R.MEMCPY_FRACTION == T.MEMCPY_FRACTION


# ---------------------------------------------------------------- in a real browser


@pytest.mark.browser
def test_kernels_panel_and_overview_show_efficiency(tmp_path_factory, browser):
    from support.browser_util import PageLog, new_page, tensorboard, wait_all_loaded
    from test_display_browser import check_drawn_table, fetch_display, goto_view
    from test_frontend_panels import open_panel

    trace = _traces()[0]
    root = tmp_path_factory.mktemp("eff_logdir")
    run = "shared/gpu-synthetic-2rank"
    (root / run).mkdir(parents=True)
    shutil.copyfile(trace, root / run / trace.name)
    worker = trace.name.split("_time_")[0]
    with tensorboard(root, tmp_path_factory.mktemp("eff_tb")) as tb:
        wait_all_loaded(tb)
        display = fetch_display(tb, run, worker)
        log = PageLog()
        page = None
        try:
            log = PageLog()
            page = new_page(browser, log, width=1280, height=1000)
            frame = open_panel(page, tb, run, worker, "overview", "us")
            frame.wait_for_selector('[data-testid="kernel-efficiency-card"]')
            table, rows = check_drawn_table(
                frame, display, "overview", "kernel_efficiency", "dt-kernel-efficiency", "us"
            )
            assert [r["id"] for r in rows] == ["tensor_cores", "sm_efficiency", "achieved_occupancy"]
            assert dict(rows[0]["cells"])["value"].endswith("%")
            # the recommendations: the Overview's notes are the Python sentences, as printed by cells.py
            notes = frame.evaluate("""() => Array.from(document.querySelectorAll(
              '[data-testid="view-sentences"] .notice'), (n) => n.textContent.trim())""")
            overview = next(v for v in display.views if v.key == "overview")
            want = [sentence_text(x, "us") for x in overview.sentences]
            assert any(x.key == "recommendation.dataloader_bound" for x in overview.sentences)
            assert notes == want, (notes, want)
            goto_view(frame, "kernels")
            table, rows = check_drawn_table(frame, display, "kernels", "kernels", "kernel-table", "us")
            header = [c for c, _ in rows[0]["cells"]]
            assert {"tensor_cores", "sm_efficiency", "achieved_occupancy"} <= set(header)
            assert {dict(r["cells"])["tensor_cores"] for r in rows if r["depth"] == 0} == {"Yes", "No"}
            assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
        finally:
            if page is not None:
                page.context.close()
