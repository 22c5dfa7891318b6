// Colours drawn on canvases: a point of a colour scale, WCAG's relative luminance and contrast ratio, and the
// ink (black or white) that reads on a fill. Black or white: one of the two always reaches 4.58 : 1 on any
// opaque fill (the worst fill, of luminance 0.179, gives both that ratio).

export type Rgb = [number, number, number];

/** "#rgb", "#rrggbb" or "rgb(r, g, b)" as [r, g, b] (0-255); black when it is none of them. */
export function parseColor(c: string): Rgb {
  const s = c.trim();
  let m = /^#([0-9a-f]{3})$/i.exec(s);
  if (m) return [0, 1, 2].map((i) => parseInt(m![1][i] + m![1][i], 16)) as Rgb;
  m = /^#([0-9a-f]{6})$/i.exec(s);
  if (m) return [0, 2, 4].map((i) => parseInt(m![1].slice(i, i + 2), 16)) as Rgb;
  m = /^rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)/i.exec(s);
  if (m) return [Number(m[1]), Number(m[2]), Number(m[3])];
  return [0, 0, 0];
}

/** The colour at `t` (0-1) of a scale of evenly spaced stops, linear in RGB (ECharts' continuous visualMap). */
export function scaleColor(stops: string[], t: number): Rgb {
  const cs = stops.map(parseColor);
  if (cs.length === 1) return cs[0];
  const x = Math.min(1, Math.max(0, t)) * (cs.length - 1);
  const i = Math.min(cs.length - 2, Math.floor(x));
  const f = x - i;
  return [0, 1, 2].map((k) => cs[i][k] + (cs[i + 1][k] - cs[i][k]) * f) as Rgb;
}

function channel(v: number): number {
  const c = v / 255;
  return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

/** WCAG 2's relative luminance. */
export function luminance(c: Rgb): number {
  return 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2]);
}

/** WCAG 2's contrast ratio (1-21). */
export function contrast(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

export const INK_DARK = "#000000";
export const INK_LIGHT = "#ffffff";

/** The text colour for a fill: black or white, whichever contrasts more. */
export function inkOn(fill: Rgb): string {
  return contrast(fill, [0, 0, 0]) >= contrast(fill, [255, 255, 255]) ? INK_DARK : INK_LIGHT;
}
