// What is selected on the timeline: a slice (its details, timeline_event), the matched instance of a
// collective slice on its member ranks (timeline_instance), and a box's sums (timeline_range).
import { useRef, useState } from "preact/hooks";
import type { TimelineEvent, TimelineInstance, TimelineRange } from "../../gen/tb_paddle_profile/v1/timeline_pb";
import { useEvent } from "../../hooks";
import { pollOnce } from "../../poll";
import type { TimelineRefs } from "./core";
import { timeAt } from "./core";
import { fetchEvent, fetchInstance, fetchRange, maybeCommunication } from "./data";
import type { MemberMark } from "./draw";
import { LABEL_W, RULER_H } from "./layout";
import { MAX_RANKS, writeRankSet } from "./ranks";

/** Asked again this many times while the instance's analysis waits for ranks (route 202). */
const INSTANCE_TRIES = 60;

export interface Selection {
  detail: TimelineEvent | null;
  instance: TimelineInstance | null;
  /** the instance as it is now, read outside a render */
  instanceNow: () => TimelineInstance | null;
  range: TimelineRange | null;
  /** selects slice `id` of `worker` (`focus`: unfolds its track and brings it into the view) */
  select: (worker: string, id: number, focus?: boolean) => Promise<void>;
  /** nothing selected: the details panel goes (a click on empty space, its Close button, Esc) */
  deselect: () => void;
  /** asks for the instance of the slice selected before (its members' slices on the ranks now shown) */
  reloadInstance: () => void;
  /** adds the member ranks that are not shown to the ranks shown (at most MAX_RANKS in all) */
  showMembers: () => void;
  /** the sums of the box between canvas points (x0, y0) and (x1, y1) */
  sumBox: (x0: number, y0: number, x1: number, y1: number) => Promise<void>;
  clearRange: () => void;
  /** forgets the selection's panels (another run or span) */
  clear: () => void;
}

export interface SelectionDeps {
  run: string;
  span: string;
  /** every worker of the run, in rank order */
  all: string[];
  update: (p: { tlsel?: string; tlranks?: string }) => void;
  setError: (message: string) => void;
  reveal: (worker: string, track: number) => void;
  focusOn: (start: number, end: number) => void;
  redraw: () => void;
}

export function useSelection(t: TimelineRefs, deps: SelectionDeps): Selection {
  const { run, span } = deps;
  const [detail, setDetail] = useState<TimelineEvent | null>(null);
  const [range, setRange] = useState<TimelineRange | null>(null);
  const [instance, setInstanceState] = useState<TimelineInstance | null>(null);
  const instanceRef = useRef<TimelineInstance | null>(null);
  /** the slice whose instance was asked for last (null: none) */
  const instanceOf = useRef<{ worker: string; id: number } | null>(null);

  const setInstance = (inst: TimelineInstance | null) => {
    instanceRef.current = inst;
    t.marks.current.members = inst && inst.matched
      ? inst.members.filter((m) => m.found).map((m): MemberMark => ({ worker: m.worker, track: m.track, depth: m.depth, start: Number(m.startNs), end: Number(m.endNs), last: m.last }))
      : null;
    setInstanceState(inst);
    deps.redraw();
  };
  /** Asks for the instance of the slice (null: none); its members' slices are looked up on the ranks shown. */
  const loadInstance = async (of: { worker: string; id: number } | null) => {
    instanceOf.current = of;
    if (!of) return setInstance(null);
    // the analysis waits for ranks to load: asked again while the route answers 202
    const got = await pollOnce(() => fetchInstance(run, span, of.worker, of.id, t.base.current, t.chosen.current), (g) => g.kind === "ok" && g.pending, {
      tries: INSTANCE_TRIES,
      stale: () => instanceOf.current !== of, // another selection meanwhile
    });
    if (!got) return;
    setInstance(got.kind === "ok" ? got.value : null);
  };

  const select = useEvent(async (worker: string, id: number, focus = false) => {
    const got = await fetchEvent(run, span, worker, id, t.base.current);
    if (got.kind === "error") {
      deps.setError(got.message);
      return;
    }
    const e = got.value;
    setDetail(e);
    t.marks.current.selected = { worker, id, track: e.track, depth: e.depth, start: Number(e.startNs), end: Number(e.endNs) };
    loadInstance(maybeCommunication(e.name, e.type) ? { worker, id } : null);
    t.scrollTo.current = { worker, track: e.track, depth: e.depth };
    if (focus) {
      deps.reveal(worker, e.track);
      deps.focusOn(Number(e.startNs), Number(e.endNs));
    } else deps.redraw();
    deps.update({ tlsel: `${worker}:${id}` });
  });

  const deselect = useEvent(() => {
    t.marks.current.selected = null;
    loadInstance(null);
    setDetail(null);
    deps.update({ tlsel: "" });
    deps.redraw();
  });

  const reloadInstance = useEvent(() => {
    if (instanceOf.current) loadInstance(instanceOf.current);
  });

  const showMembers = () => {
    const inst = instanceRef.current;
    if (!inst) return;
    const now = t.chosen.current;
    const missing = inst.members.map((m) => m.worker).filter((w) => w && !now.includes(w));
    const order = new Map(deps.all.map((w, i) => [w, i]));
    const next = [...now, ...missing.slice(0, Math.max(0, MAX_RANKS - now.length))].sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
    deps.update({ tlranks: writeRankSet(next) });
  };

  const sumBox = useEvent(async (x0: number, y0: number, x1: number, y1: number) => {
    if (!t.data.current) return;
    const t0 = timeAt(t, Math.max(LABEL_W, Math.min(x0, x1)));
    const t1 = timeAt(t, Math.max(LABEL_W, Math.max(x0, x1)));
    const top = t.scroll.current?.scrollTop ?? 0;
    const ya = Math.min(y0, y1) - RULER_H + top;
    const yb = Math.max(y0, y1) - RULER_H + top;
    const tracks = new Set<string>();
    for (const r of t.lay.current.rows) if (r.kind === "lane" && r.y + r.h > ya && r.y < yb) tracks.add(`${r.worker}:${r.track}`);
    if (!tracks.size) return;
    const got = await fetchRange(run, span, t0, t1, [...tracks], t.base.current);
    if (got.kind === "ok") setRange(got.value);
    else deps.setError(got.message);
  });

  const instanceNow = useEvent(() => instanceRef.current);
  const clear = useEvent(() => {
    setDetail(null);
    setRange(null);
  });

  return { detail, instance, range, select, deselect, reloadInstance, showMembers, sumBox, clearRange: () => setRange(null), clear, instanceNow };
}
