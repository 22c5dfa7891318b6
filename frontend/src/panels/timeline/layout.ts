// The timeline's layout: which rows the canvas has (rank headers, lanes, folded tracks, counter lanes),
// where, and the folds (the URL's `tlfold`) that decide it.
import type { Decoded } from "./data";

export const LABEL_W = 200;
export const RULER_H = 26;
export const LANE_H = 17;
export const RANK_H = 22;
/** A folded rank's header: its label and its GPU's shares of the view on two lines at the left, where its
 * threads and streams were busy across the plot (communication kernels orange, other kernels green). */
export const FOLDED_RANK_H = 36;
export const TRACK_GAP = 5;

export const FOLD_H = 10; // a folded track: where its slices are, no names
export const COUNTER_H = 28; // a counter lane: an area chart of the counter's value per pixel

export interface Row {
  /** rank: the header of a rank (its tracks follow unless folded); lane: one row of a track's slices;
   * fold: a folded track, one thin row (nothing in it can be selected); counter: a counter lane (memory,
   * GPU utilization) of the rank, its `counter`-th. */
  kind: "rank" | "lane" | "fold" | "counter";
  y: number; // content y (below the ruler, before scrolling)
  h: number;
  rank: number;
  worker: string;
  track: number; // -1 for a rank header
  depth: number; // -1 for a rank header or a folded track
  label: string;
  first: boolean; // the first lane of its track (draws the track label), a fold row, a rank header
  folded: boolean; // a folded rank's header or a fold row
  lanes: number; // the lanes of the track (fold rows), the tracks of the rank (rank headers)
  counter?: number; // counter rows: the index into the rank's counters
}

export interface Layout {
  rows: Row[];
  height: number;
  key: string;
}

/** Folded ranks (by worker) and folded tracks ("worker:track"). Kept in the URL as `tlfold`. */
export interface Folds {
  ranks: Set<string>;
  tracks: Set<string>;
}

/** `tlfold`: comma-separated "worker:*" (a rank) and "worker:track" (a track); the worker is
 * URI-encoded so that a comma or colon in it stays inside its part. Malformed parts are ignored. */
export function parseFolds(s: string): Folds {
  const out: Folds = { ranks: new Set(), tracks: new Set() };
  for (const part of s.split(",")) {
    const i = part.lastIndexOf(":");
    if (i <= 0) continue;
    let worker: string;
    try {
      worker = decodeURIComponent(part.slice(0, i));
    } catch {
      continue;
    }
    const what = part.slice(i + 1);
    if (what === "*") out.ranks.add(worker);
    else if (/^\d+$/.test(what)) out.tracks.add(`${worker}:${Number(what)}`);
  }
  return out;
}

export function writeFolds(f: Folds): string {
  const parts: string[] = [];
  for (const w of [...f.ranks].sort()) parts.push(`${encodeURIComponent(w)}:*`);
  const tracks = [...f.tracks].map((k) => {
    const i = k.lastIndexOf(":");
    return [k.slice(0, i), Number(k.slice(i + 1))] as const;
  });
  tracks.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  for (const [w, t] of tracks) parts.push(`${encodeURIComponent(w)}:${t}`);
  return parts.join(",");
}

/** Rows for every rank's tracks; depends only on the tracks and the folds, so it stays put while zooming.
 * A folded rank is its header alone; a folded track is one thin row. */
/** What a rank's header adds for its role in the server's order of the ranks (ranks.tsx RankDefault.roles): the
 * straggler and its role peers, as the compact view's rows say it. */
export function roleSuffix(role: string | undefined): string {
  return role === "straggler" ? " ★ straggler" : role === "peer" ? " · role peer" : "";
}

export function layout(data: Decoded | null, folds: Folds, labels?: Map<string, string>, roles?: Map<string, string>): Layout {
  const rows: Row[] = [];
  let y = 0;
  const keyParts: string[] = [];
  (data?.ranks ?? []).forEach((r, ri) => {
    const title = (labels?.get(r.worker) || (r.rank >= 0 ? `rank ${r.rank}` : r.worker)) + roleSuffix(roles?.get(r.worker));
    const rankFolded = folds.ranks.has(r.worker);
    const n = r.tracks.length;
    const label = `${title}${r.state ? ` · ${r.state}` : ""}${rankFolded && n ? ` · ${n} track${n > 1 ? "s" : ""}` : ""}`;
    const h = rankFolded ? FOLDED_RANK_H : RANK_H;
    rows.push({ kind: "rank", y, h, rank: ri, worker: r.worker, track: -1, depth: -1, label, first: true, folded: rankFolded, lanes: n });
    y += h;
    if (rankFolded) {
      y += TRACK_GAP;
      keyParts.push(`${r.worker}:*`);
      return;
    }
    for (const t of r.tracks) {
      const depth = Math.max(1, t.depth);
      if (folds.tracks.has(`${r.worker}:${t.id}`)) {
        rows.push({ kind: "fold", y, h: FOLD_H, rank: ri, worker: r.worker, track: t.id, depth: -1, label: t.label, first: true, folded: true, lanes: depth });
        y += FOLD_H + TRACK_GAP;
        keyParts.push(`${r.worker}:${t.id}:f`);
        continue;
      }
      for (let d = 0; d < depth; d++) {
        rows.push({ kind: "lane", y, h: LANE_H, rank: ri, worker: r.worker, track: t.id, depth: d, label: t.label, first: d === 0, folded: false, lanes: depth });
        y += LANE_H;
      }
      y += TRACK_GAP;
      keyParts.push(`${r.worker}:${t.id}:${depth}`);
    }
    (r.counters ?? []).forEach((c, ci) => {
      rows.push({ kind: "counter", y, h: COUNTER_H, rank: ri, worker: r.worker, track: -1, depth: -1, label: c.label, first: false, folded: false, lanes: 0, counter: ci });
      y += COUNTER_H;
    });
    if (r.counters?.length) {
      y += TRACK_GAP;
      keyParts.push(`${r.worker}:c${r.counters.length}`);
    }
  });
  return { rows, height: y, key: keyParts.join("|") };
}
