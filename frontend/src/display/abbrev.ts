// Names shortened to a cell's width so that two different names never look alike: the part where a name
// parts from its look-alikes (the longest prefix it shares with another name of the column) stays in
// view. "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_…" and its "_nn_" and "_nt_" twins
// share 36 characters and the last 40: cut at the end they read the same, here they read
// "sm90_xmma_gem…f32_f32_tn_n_tilesize128x256x64_w…", "…f32_f32_nn_n_…", "…f32_f32_nt_n_…".

/** Characters of a name kept before the "…" when its distinguishing part lies further on. */
const HEAD = 13;
/** Characters of context kept before the distinguishing position. */
const BEFORE = 8;

/**
 * For each distinct name: the length of the longest prefix it shares with another name of the list (where
 * it starts to differ from its nearest look-alike). The longest is always with a neighbour in sorted order.
 */
export function partingPoints(names: string[]): Map<string, number> {
  const sorted = [...new Set(names)].sort();
  const out = new Map<string, number>();
  const lcp = (a: string, b: string) => {
    const n = Math.min(a.length, b.length);
    let i = 0;
    while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
    return i;
  };
  for (let i = 0; i < sorted.length; i++) {
    const prev = i > 0 ? lcp(sorted[i - 1], sorted[i]) : 0;
    const next = i + 1 < sorted.length ? lcp(sorted[i], sorted[i + 1]) : 0;
    out.set(sorted[i], Math.max(prev, next));
  }
  return out;
}

/** The largest k in [lo, hi] with ok(k) (ok monotone: true up to some k), or lo - 1. */
function largest(lo: number, hi: number, ok: (k: number) => boolean): number {
  let best = lo - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ok(mid)) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}

/**
 * `name` as it fits (`fits(text)`: its width in the cell is within the room): itself when it fits; else, when
 * it parts from its look-alikes at `at` (partingPoints) further on than a short head, the head, "…", and the
 * name from a little before `at` on, cut with "…" where the room ends; else the name cut at its end when that
 * keeps `at` in view; else the window after a shorter head (down to none: "…f32_tn_n…"), so that a narrow cell
 * (Compare's kernels at 1,280 px: 23 characters) does not cut three GEMMs to one "sm90_xmma_gemm_bf16bf1…".
 */
export function abbreviate(name: string, at: number, fits: (text: string) => boolean): string {
  if (fits(name)) return name;
  const start = Math.max(0, at - BEFORE);
  const window = (h: number): string | null => {
    const head = name.slice(0, h) + "…";
    const k = largest(1, name.length - start, (n) => fits(head + name.slice(start, start + n) + (start + n < name.length ? "…" : "")));
    // the window must reach past the parting point to tell the name apart
    return k >= 1 && start + k > at ? head + name.slice(start, start + k) + (start + k < name.length ? "…" : "") : null;
  };
  if (start > HEAD + 1) {
    const w = window(HEAD);
    if (w !== null) return w;
  }
  const k = largest(1, name.length - 1, (n) => fits(name.slice(0, n) + "…"));
  if (k > at) return name.slice(0, k) + "…";
  for (let h = Math.min(HEAD, start - 1) - (start > HEAD + 1 ? 1 : 0); h >= 0; h--) {
    const w = window(h);
    if (w !== null) return w;
  }
  return k >= 1 ? name.slice(0, k) + "…" : "…";
}

let ctx: CanvasRenderingContext2D | null | undefined;
const widths = new Map<string, number>();

/** The width in px of `text` in the tables' 12 px font (measured on a canvas; cached). */
export function textWidth(text: string): number {
  let w = widths.get(text);
  if (w !== undefined) return w;
  if (ctx === undefined) {
    ctx = document.createElement("canvas").getContext("2d");
    if (ctx) ctx.font = `12px ${getComputedStyle(document.body).fontFamily || "sans-serif"}`;
  }
  w = ctx ? ctx.measureText(text).width : text.length * 7;
  if (widths.size > 50_000) widths.clear();
  widths.set(text, w);
  return w;
}
