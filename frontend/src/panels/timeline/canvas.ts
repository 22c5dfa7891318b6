// Canvas helpers of both timelines (detailed and compact): the palettes, a slice's colour, the ruler's
// steps and labels, a canvas sized to its box, text cut to fit.

const colorCache = new Map<string, string>();
export function colorOf(name: string, type: string): string {
  const key = `${type}\u0000${name}`;
  let c = colorCache.get(key);
  if (c) return c;
  if (type === "CudaRuntime") c = "#b0bec5";
  else if (type === "ProfileStep") c = "#cfd8dc";
  else if (type === "Memcpy") c = "#66bb6a";
  else if (type === "Memset") c = "#26a69a";
  else {
    let h = 2166136261;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    const hue = ((h >>> 0) % 360);
    const sat = type === "Kernel" ? 65 : 45;
    const light = type === "Kernel" ? 55 : 68;
    c = `hsl(${hue},${sat}%,${light}%)`;
  }
  if (colorCache.size > 5000) colorCache.clear();
  colorCache.set(key, c);
  return c;
}

/** The canvas's colours (slices keep their hues in both). */
export interface Palette {
  bg: string;
  header: string;
  headerText: string;
  fold: string;
  laneTop: string;
  labelText: string;
  foldText: string;
  trackMark: string;
  edge: string;
  rulerBg: string;
  rulerText: string;
  tick: string;
  windowText: string;
  hoverLine: string;
  dim: string;
  dimMerged: string;
  dimText: string;
  /** a folded rank's kernels: the compact timeline's colours */
  compute: string;
  communication: string;
  sliceText: string;
  selected: string;
  arrow: string;
  arrowHead: string;
  counterBg: string;
  counterBase: string;
  counterAxis: string;
  member: string;
  memberWait: string;
}

export const LIGHT: Palette = {
  bg: "#fff", header: "#eceff1", headerText: "#212121", fold: "#f5f5f5", laneTop: "#fafafa", labelText: "#424242",
  foldText: "#9e9e9e", trackMark: "#bdbdbd", edge: "#e0e0e0", rulerBg: "#fafafa", rulerText: "#616161", tick: "#bdbdbd",
  windowText: "#424242", hoverLine: "rgba(0,0,0,0.25)", dim: "#eeeeee", dimMerged: "#e0e0e0", dimText: "#9e9e9e", compute: "#43a047", communication: "#fb8c00",
  sliceText: "#111", selected: "#0d47a1", arrow: "rgba(33,33,33,0.55)", arrowHead: "rgba(33,33,33,0.7)",
  counterBg: "#fbfbfb", counterBase: "#eeeeee", counterAxis: "#757575", member: "#e65100", memberWait: "rgba(230,81,0,0.22)",
};

export const DARK: Palette = {
  bg: "#1e1e1e", header: "#2d3236", headerText: "#e8eaed", fold: "#262626", laneTop: "#2a2a2a", labelText: "#c8ccd0",
  foldText: "#8a8f94", trackMark: "#6b7075", edge: "#3c4043", rulerBg: "#252526", rulerText: "#b0b4b8", tick: "#5f6368",
  windowText: "#c8ccd0", hoverLine: "rgba(255,255,255,0.3)", dim: "#3a3a3a", dimMerged: "#444", dimText: "#777", compute: "#66bb6a", communication: "#ffa726",
  sliceText: "#111", selected: "#8ab4f8", arrow: "rgba(232,234,237,0.6)", arrowHead: "rgba(232,234,237,0.8)",
  counterBg: "#232323", counterBase: "#3a3a3a", counterAxis: "#9aa0a6", member: "#ffab40", memberWait: "rgba(255,171,64,0.28)",
};

/**
 * A ruler label: the unit of the view's largest time, with as many decimals as the tick step needs
 * (so that two ticks never read the same: "10.541 2 s" at deep zoom, not "10.541 s" twice).
 */
export function rulerLabel(t: number, step: number, far: number): string {
  const a = Math.abs(far);
  const [unit, sym] = a >= 1e9 ? [1e9, "s"] : a >= 1e6 ? [1e6, "ms"] : a >= 1e3 ? [1e3, "µs"] : [1, "ns"];
  const decimals = Math.max(0, Math.min(9, Math.ceil(Math.log10(unit / step) - 1e-9)));
  return `${(t / unit).toFixed(decimals)} ${sym}`;
}

/** The canvas's 2D context drawing in CSS pixels at the device's pixel ratio, its backing store sized to
 * its box (only when that changed); null without a context. */
export function fitCanvas(canvas: HTMLCanvasElement): { ctx: CanvasRenderingContext2D; w: number; h: number } | null {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, w, h };
}

export function niceStep(ns: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(ns)));
  for (const m of [1, 2, 5, 10]) if (m * p >= ns) return m * p;
  return 10 * p;
}

/** ▾ (open) or ▸ (folded), centred on (x, y). */
export function triangle(ctx: CanvasRenderingContext2D, x: number, y: number, open: boolean, r: number): void {
  ctx.beginPath();
  if (open) {
    ctx.moveTo(x - r, y - r / 2);
    ctx.lineTo(x + r, y - r / 2);
    ctx.lineTo(x, y + r * 0.8);
  } else {
    ctx.moveTo(x - r / 2, y - r);
    ctx.lineTo(x - r / 2, y + r);
    ctx.lineTo(x + r * 0.8, y);
  }
  ctx.closePath();
  ctx.fill();
}


/** `text` cut to what fits in `px` in the context's font, with an ellipsis (measured, not estimated). */
export function fitText(ctx: CanvasRenderingContext2D, text: string, px: number): string {
  if (ctx.measureText(text).width <= px) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= px) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, lo)}…`;
}

export function truncate(text: string, px: number): string {
  const max = Math.floor(px / 6.2);
  return text.length > max ? `${text.slice(0, Math.max(0, max - 1))}…` : text;
}
