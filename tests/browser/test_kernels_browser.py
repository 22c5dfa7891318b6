"""The Kernels table at 1,280 px in a real ``tensorboard`` and Debian's Chromium (issue 26.6).

A generated DP2 run (tbp_synth: its kernels are Hopper cuBLAS GEMMs whose names share their first 36 and
last 40 characters, ``sm90_xmma_gemm_bf16bf16_bf16f32_f32_{tn,nn,nt}_…_execute_segment_k_off_kernel__5x_cublas``)
against the `display` route's model:

* no column is clipped: every column the panel draws (or that the user did not hide) lies inside the table's
  box, without a horizontal scroll, at 1,280 and 1,440 px;
* the kernel names as drawn (the cell's text, and nothing cut further by the cell's width) are as distinct
  as the route's names: two kernels never look alike; the full name is the cell's hover title;
* a column hidden from the table's "Columns" menu leaves the table and comes back, and the menu's choice is
  kept in the link.

Screenshots go to browser_util.SHOTS.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from support.report import ran
from support.browser_util import REPO, SHOTS, checked_pages, tables_past_the_box, tensorboard, wait_all_loaded

pytestmark = [pytest.mark.browser]


from tb_paddle_profile.present.display.summary import find_table  # noqa: E402
from tb_paddle_profile.v1 import display_pb2  # noqa: E402

RUN = "synth-dp2"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kernels_logdir")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
            "--mp",
            "1",
            "--pp",
            "1",
            "--steps",
            "2",
            "--layers",
            "2",
            "--micro-batches",
            "1",
            "--out",
            str(root / RUN),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    return root


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("kernels_tb")) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture
def pages(browser, request):
    gen = checked_pages(browser, lambda: ran(request))
    yield next(gen)
    next(gen, None)


def route_kernels(tb, worker: str):
    data = tb.get(f"/data/plugin/paddle_profile/display?run={quote(RUN)}&worker={quote(worker)}&span=0", timeout=120)
    return find_table(display_pb2.Display.FromString(data), "kernels")


def open_kernels(page, tb, extra: str = ""):
    keys = {"run": RUN, "worker": "rank0", "span": "0", "unit": "ms", "view": "kernels"}
    page.goto(
        f"{tb.url}/#paddle_profile&"
        + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
        + extra
    )
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="kernel-table"] .vt-row', timeout=90_000)
    return frame


# The table's box, each header's box, and each name cell: its text, its title, whether the cell cuts it further.
_LAYOUT = """() => {
  const t = document.querySelector('[data-testid="kernel-table"]');
  const box = t.getBoundingClientRect();
  const heads = Array.from(t.querySelectorAll('.vt-hrow:not(.groups) .vt-th')).map((h) => { const r = h.getBoundingClientRect();
    return { key: h.dataset.col, left: r.left, right: r.right, text: h.textContent }; });
  const names = Array.from(t.querySelectorAll('.vt-row')).map((r) => { const cell = r.querySelector('.vt-td.name'); const n = cell.querySelector('.vt-name');
    // what is drawn: the short form (the ::before of a .vt-name.short, its data-short) or the text itself
    const before = getComputedStyle(n, '::before').content;
    const drawn = n.classList.contains('short') ? (before.startsWith('"') ? JSON.parse(before) : '') : n.textContent;
    return { text: drawn, short: n.dataset.short || '', whole: n.textContent, title: cell.title, cut: n.scrollWidth > n.getBoundingClientRect().width + 1 || cell.scrollWidth > cell.clientWidth + 1, depth: Number(r.dataset.depth || 0) }; });
  return { left: box.left, right: box.right, heads, names, scrollW: t.scrollWidth, clientW: t.clientWidth };
}"""


@pytest.mark.parametrize("width", [1280, 1440])
def test_kernel_table_fits_and_names_stay_distinct(tb, pages, width):
    table = route_kernels(tb, "rank0")
    full = [r.cells[0].title or r.cells[0].text for r in table.rows if r.depth == 0]
    assert len({n for n in full if n.startswith("sm90_xmma_gemm")}) == 3, full
    page = pages(width, 800)
    frame = open_kernels(page, tb)
    SHOTS.mkdir(parents=True, exist_ok=True)
    frame.locator('[data-testid="kernels-card"]').screenshot(path=str(SHOTS / f"kernels-{width}.png"))
    lay = frame.evaluate(_LAYOUT)
    print(f"{width}: table {lay['right'] - lay['left']:.0f} px, columns {lay['scrollW']} px in {lay['clientW']} px")
    assert lay["scrollW"] <= lay["clientW"] + 1, "the columns overflow the table (a horizontal scroll)"
    assert tables_past_the_box(frame) == []
    for h in lay["heads"]:
        assert lay["left"] - 1 <= h["left"] and h["right"] <= lay["right"] + 1, (h, lay["left"], lay["right"])
    drawn = [n for n in lay["names"] if n["depth"] == 0]
    assert drawn, "no kernel rows drawn"
    for n in drawn:
        assert not n["cut"], f"the cell cuts the name further: {n}"
        assert n["title"] in full, n
        assert n["text"] and (not n["short"] or n["text"] == n["short"]), n
        # the element's text stays the whole name (search, copy), the hover title the full one
        assert (
            n["whole"]
            == [r.cells[0].text for r in table.rows if (r.cells[0].title or r.cells[0].text) == n["title"]][0]
        )
    print("drawn:", [n["text"] for n in drawn if n["title"].startswith("sm90")])
    # as distinct as the names themselves
    by_text = {}
    for n in drawn:
        by_text.setdefault(n["text"], set()).add(n["title"])
    alike = {t: ts for t, ts in by_text.items() if len(ts) > 1}
    assert not alike, alike


def test_columns_menu_hides_and_shows_a_column_kept_in_the_link(tb, pages):
    page = pages(1280, 800)
    frame = open_kernels(page, tb)
    heads = lambda: [h["key"] for h in frame.evaluate(_LAYOUT)["heads"]]  # noqa: E731
    assert "grid" not in heads() and "tensor_cores" in heads()  # hidden to fit; the efficiency stays
    frame.click('[data-testid="kernel-table-columns"] > summary')
    frame.check('[data-testid="kernel-table-columns"] input[data-col="grid"]')
    frame.wait_for_function(
        """() => !!document.querySelector('[data-testid="kernel-table"] .vt-th[data-col="grid"]')"""
    )
    frame.uncheck('[data-testid="kernel-table-columns"] input[data-col="tensor_cores"]')
    frame.wait_for_function(
        """() => !document.querySelector('[data-testid="kernel-table"] .vt-th[data-col="tensor_cores"]')"""
    )
    page.wait_for_function("() => decodeURIComponent(location.hash).includes('dt.kernels.cols')")
    link = page.url
    # the link opens the same columns
    other = pages(1280, 800)
    other.goto(link)
    frame2 = other.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached"
    ).content_frame()
    frame2.wait_for_selector('[data-testid="kernel-table"] .vt-row', timeout=90_000)
    got = [h["key"] for h in frame2.evaluate(_LAYOUT)["heads"]]
    assert "grid" in got and "tensor_cores" not in got, got
