// The formatting of `tb-paddle-profile distributed` (tb_paddle_profile/render/parallel_text.py), so the
// panel prints exactly what the terminal prints: times with '%.2f' (format.ts), shares with '%.1f%%',
// calls per step with '%.1f', thresholds with '%.0f%%', bytes as "1.50 MB", advice values with '%g'.
import { CollectiveKind } from "../../gen/tb_paddle_profile/v1/summary_pb";

/**
 * Python's `'%.{d}f' % x`. Python rounds the exact binary value half-to-even, JavaScript's toFixed
 * rounds exact ties up; they differ only on exact ties, i.e. when x·2^(d+1) is an odd integer.
 */
export function pyFixed(x: number, d: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  const a = Math.abs(x);
  const scaled = a * 2 ** (d + 1); // exact: a power-of-two scaling
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  if (Number.isInteger(scaled) && scaled % 2 === 1 && scaled < 2 ** 50) {
    const p = 10 ** d;
    const n = Math.floor(a * p); // a·10^d = n + 0.5 exactly
    const kept = n % 2 === 0 ? n : n + 1;
    const int = Math.floor(kept / p);
    return d === 0 ? `${sign}${int}` : `${sign}${int}.${String(kept % p).padStart(d, "0")}`;
  }
  return `${sign}${a.toFixed(d)}`;
}

/** parallel_text._pct: a fraction as '%.1f%%'. */
export function pct1(fraction: number): string {
  return `${pyFixed(fraction * 100, 1)}%`;
}

/** Python's `f"{x:.0%}"`. */
export function pct0(fraction: number): string {
  return `${pyFixed(fraction * 100, 0)}%`;
}

/** parallel_text._bytes: "-" for 0, else B / KB / MB / GB with 2 decimals (binary multiples). */
export function pyBytes(n: number): string {
  if (!n) return "-";
  for (const [unit, div] of [
    ["GB", 2 ** 30],
    ["MB", 2 ** 20],
    ["KB", 2 ** 10],
  ] as const) {
    if (n >= div) return `${pyFixed(n / div, 2)} ${unit}`;
  }
  return `${n} B`;
}

/** Python's `f"{x:g}"` (6 significant digits, trailing zeros dropped, exponent below 1e-4 or from 1e6). */
export function pyG(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const exp = Number(x.toExponential(5).split("e")[1]);
  if (exp < -4 || exp >= 6) {
    const [mant, e] = x.toExponential(5).split("e");
    const m = mant.includes(".") ? mant.replace(/0+$/, "").replace(/\.$/, "") : mant;
    const en = Number(e);
    return `${m}e${en < 0 ? "-" : "+"}${String(Math.abs(en)).padStart(2, "0")}`;
  }
  const s = x.toFixed(Math.max(0, 5 - exp));
  return s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
}

/** collectives.KIND_LABELS. */
export const KIND_LABELS: Record<number, string> = {
  [CollectiveKind.ALL_REDUCE]: "all_reduce",
  [CollectiveKind.ALL_GATHER]: "all_gather",
  [CollectiveKind.REDUCE_SCATTER]: "reduce_scatter",
  [CollectiveKind.BROADCAST]: "broadcast",
  [CollectiveKind.SEND_RECV]: "send_recv",
  [CollectiveKind.ALL_TO_ALL]: "all_to_all",
  [CollectiveKind.OTHER]: "other",
};

export function kindLabel(kind: CollectiveKind): string {
  return KIND_LABELS[kind] ?? "other";
}

/** One colour per collective kind, used by every chart of the view. */
export const KIND_COLORS: Record<number, string> = {
  [CollectiveKind.ALL_REDUCE]: "#f57c00",
  [CollectiveKind.ALL_GATHER]: "#e53935",
  [CollectiveKind.REDUCE_SCATTER]: "#d81b60",
  [CollectiveKind.BROADCAST]: "#8e24aa",
  [CollectiveKind.SEND_RECV]: "#fbc02d",
  [CollectiveKind.ALL_TO_ALL]: "#6d4c41",
  [CollectiveKind.OTHER]: "#78909c",
};

export const KIND_ORDER: CollectiveKind[] = [
  CollectiveKind.ALL_REDUCE,
  CollectiveKind.ALL_GATHER,
  CollectiveKind.REDUCE_SCATTER,
  CollectiveKind.BROADCAST,
  CollectiveKind.SEND_RECV,
  CollectiveKind.ALL_TO_ALL,
  CollectiveKind.OTHER,
];
