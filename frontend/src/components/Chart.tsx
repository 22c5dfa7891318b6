// A thin ECharts wrapper. Only the chart types and components the panels use are registered, which
// keeps the bundle small. Tooltips are built as DOM nodes with textContent: names never become HTML.
import { BarChart, HeatmapChart, LineChart, PieChart } from "echarts/charts";
import {
  DataZoomComponent,
  GridComponent,
  LegendComponent,
  MarkPointComponent,
  TooltipComponent,
  VisualMapContinuousComponent,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";
import * as echarts from "echarts/core";
import { CanvasRenderer } from "echarts/renderers";
import type { BarSeriesOption, HeatmapSeriesOption, LineSeriesOption, PieSeriesOption } from "echarts/charts";
import type {
  DataZoomComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
  VisualMapComponentOption,
} from "echarts/components";
import { useEffect, useRef, useState } from "preact/hooks";
import { isDark, onDarkChange } from "../host";

echarts.use([
  BarChart,
  HeatmapChart,
  LineChart,
  PieChart,
  GridComponent,
  TooltipComponent,
  LegendComponent,
  DataZoomComponent,
  MarkPointComponent,
  VisualMapContinuousComponent,
  CanvasRenderer,
]);

export type ChartOption = ComposeOption<
  | BarSeriesOption
  | LineSeriesOption
  | PieSeriesOption
  | HeatmapSeriesOption
  | GridComponentOption
  | TooltipComponentOption
  | LegendComponentOption
  | DataZoomComponentOption
  | VisualMapComponentOption
>;

export type EChart = echarts.ECharts;

/** Colours close to TensorBoard's own chart palette. */
export const PALETTE = [
  "#1976d2",
  "#f57c00",
  "#43a047",
  "#8e24aa",
  "#e53935",
  "#00897b",
  "#6d4c41",
  "#d81b60",
  "#546e7a",
  "#c0ca33",
  "#5e35b1",
  "#039be5",
];

export const BASE_TEXT = { color: "#424242", fontSize: 11, fontFamily: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" };

// Dark mode (TensorBoard's, see host.ts): the panels write their charts in light colours; the text,
// axis, grid and border greys among them are mapped here, in one place, to their dark counterparts.
const DARK_GREYS: Record<string, string> = {
  "#eee": "#3a3a3a", "#eeeeee": "#3a3a3a", "#e0e0e0": "#424242", "#ccc": "#616161", "#cccccc": "#616161",
  "#fff": "#262626", "#ffffff": "#262626", "#424242": "#d0d0d0", "#616161": "#bdbdbd", "#757575": "#a8a8a8",
  "#212121": "#eeeeee", "#333": "#e0e0e0", "#cfd8dc": "#546e7a",
};
const DARK_THEME = {
  backgroundColor: "transparent",
  textStyle: { color: "#d0d0d0" },
  legend: { textStyle: { color: "#d0d0d0" }, pageTextStyle: { color: "#d0d0d0" } },
  categoryAxis: { axisLine: { lineStyle: { color: "#616161" } }, axisLabel: { color: "#bdbdbd" }, splitLine: { lineStyle: { color: "#3a3a3a" } }, nameTextStyle: { color: "#bdbdbd" } },
  valueAxis: { axisLine: { lineStyle: { color: "#616161" } }, axisLabel: { color: "#bdbdbd" }, splitLine: { lineStyle: { color: "#3a3a3a" } }, nameTextStyle: { color: "#bdbdbd" } },
  logAxis: { axisLine: { lineStyle: { color: "#616161" } }, axisLabel: { color: "#bdbdbd" }, splitLine: { lineStyle: { color: "#3a3a3a" } }, nameTextStyle: { color: "#bdbdbd" } },
  // the zoom slider: a dark strip, the chosen window a lighter band, the handles light grey
  dataZoom: {
    textStyle: { color: "#bdbdbd" },
    borderColor: "#424242",
    backgroundColor: "#2d2d2d",
    fillerColor: "rgba(100,181,246,0.18)",
    dataBackground: { lineStyle: { color: "#616161" }, areaStyle: { color: "#3a3a3a" } },
    selectedDataBackground: { lineStyle: { color: "#64b5f6" }, areaStyle: { color: "#2a4763" } },
    handleStyle: { color: "#8a8a8a", borderColor: "#a0a0a0" },
    moveHandleStyle: { color: "#757575", opacity: 0.6 },
    brushStyle: { color: "rgba(100,181,246,0.2)" },
    emphasis: { handleStyle: { borderColor: "#b0b0b0" }, moveHandleStyle: { color: "#9e9e9e" } },
  },
  visualMap: { textStyle: { color: "#d0d0d0" } },
  tooltip: { backgroundColor: "#2d2d2d", borderColor: "#555555", textStyle: { color: "#e8e8e8" } },
};
echarts.registerTheme("tbpp-dark", DARK_THEME);

/** The option with its light greys swapped for dark ones (functions and number arrays are kept as they are). */
function darken(value: unknown, key = ""): unknown {
  if (typeof value === "string") return /color$/i.test(key) ? DARK_GREYS[value.toLowerCase()] ?? value : value;
  if (Array.isArray(value)) {
    if (value.length === 0 || typeof value[0] !== "object" || value[0] === null) return value;
    return value.map((v) => darken(v, key));
  }
  if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    // a series label's rich styles are chosen for the series' own fills, which dark mode keeps
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = k === "rich" && key === "label" ? v : darken(v, k);
    return out;
  }
  return value;
}

/** One tooltip line: a colour dot, a name and a value, as DOM nodes (no HTML strings). */
export function tooltipBox(title: string, lines: { color?: string; name: string; value: string }[]): HTMLElement {
  const box = document.createElement("div");
  box.className = "tbpp-tip";
  if (title) {
    const t = document.createElement("div");
    t.className = "tbpp-tip-title";
    t.textContent = title;
    box.appendChild(t);
  }
  for (const line of lines) {
    const row = document.createElement("div");
    row.className = "tbpp-tip-row";
    const dot = document.createElement("span");
    dot.className = "tbpp-tip-dot";
    if (line.color) dot.style.background = line.color;
    const name = document.createElement("span");
    name.className = "tbpp-tip-name";
    name.textContent = line.name;
    const value = document.createElement("span");
    value.className = "tbpp-tip-value";
    value.textContent = line.value;
    row.append(dot, name, value);
    box.appendChild(row);
  }
  return box;
}

const queue: (() => void)[] = [];
let pumping = false;

function pump(): void {
  const job = queue.shift();
  if (job) job();
  if (queue.length) window.setTimeout(pump, 0);
  else pumping = false;
}

/** Runs `job` in a later task, after the charts queued before it; the returned function cancels it. */
export function drawSoon(job: () => void): () => void {
  let live = true;
  queue.push(() => live && job());
  if (!pumping) {
    pumping = true;
    window.setTimeout(pump, 0);
  }
  return () => {
    live = false;
  };
}

export interface ChartProps {
  option: ChartOption;
  height: number;
  onClick?: (params: { name: string; seriesName?: string; dataIndex: number; seriesIndex?: number; data?: unknown }) => void;
  testId?: string;
  /** After each drawing (the option set, a resize, a zoom): the option to merge that lays out what depends on
   * the chart's pixels (the pins' labels: markLabels.ts), or null. */
  arrange?: (chart: echarts.ECharts) => ChartOption | null;
}

export function Chart({ option, height, onClick, testId, arrange }: ChartProps) {
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const click = useRef(onClick);
  click.current = onClick;
  const arrangeRef = useRef(arrange);
  arrangeRef.current = arrange;

  const [darkMode, setDarkMode] = useState(isDark());
  useEffect(() => onDarkChange(setDarkMode), []);

  useEffect(() => {
    const node = el.current!;
    const instance = echarts.init(node, darkMode ? "tbpp-dark" : null, { renderer: "canvas" });
    chart.current = instance;
    // the instance on its element, for the browser tests (the labels' and cells' pixels, the option drawn)
    (node as HTMLDivElement & { __tbppChart?: echarts.ECharts }).__tbppChart = instance;
    instance.on("click", (p) => click.current?.(p as never));
    const rearrange = () => {
      const more = arrangeRef.current?.(instance);
      if (more) instance.setOption(darkMode ? (darken(more) as ChartOption) : more);
    };
    instance.on("datazoom", rearrange);
    const observer = new ResizeObserver(() => {
      instance.resize();
      if (node.hasAttribute("data-drawn")) rearrange();
    });
    observer.observe(node);
    return () => {
      observer.disconnect();
      instance.dispose();
      chart.current = null;
    };
  }, [darkMode]);

  useEffect(() => {
    // Each chart is drawn in a task of its own (a queue, one chart per task), so a page of many large
    // charts never blocks the main thread in one long task.
    return drawSoon(() => {
    const full = {
      color: PALETTE,
      textStyle: BASE_TEXT,
      animation: false,
      ...option,
      tooltip: option.tooltip ? { confine: true, ...(option.tooltip as object), className: "tbpp-tooltip" } : undefined,
    } as ChartOption;
    const c = chart.current;
    c?.setOption(darkMode ? (darken(full) as ChartOption) : full, { notMerge: true });
    const more = c && arrangeRef.current?.(c);
    if (c && more) c.setOption(darkMode ? (darken(more) as ChartOption) : more);
    // Marks the container once drawn (setOption draws synchronously), so tests and the benchmark can wait for it.
    el.current?.setAttribute("data-drawn", "1");
    el.current?.setAttribute("data-theme", darkMode ? "dark" : "light");
    });
  }, [option, darkMode]);

  return <div class="chart" ref={el} style={{ height: `${height}px` }} data-testid={testId} />;
}
