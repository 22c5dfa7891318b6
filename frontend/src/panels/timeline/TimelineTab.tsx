// The timeline tab: the compact view (one row per rank, Compact.tsx) or the detailed one (Timeline.tsx),
// and under the compact rows the detailed lanes of the ranks clicked.
import type { ComponentProps } from "preact";
import { CompactTimeline } from "./Compact";
import { MAX_RANKS, parseRankSet, writeRankSet } from "./ranks";
import type { TimelineState } from "./Timeline";
import { Timeline } from "./Timeline";

/** More ranks than this: the compact view is the default. */
export const COMPACT_ABOVE = 16;

/** Whether the tab shows the compact view: tlmode says so; by default beyond COMPACT_ABOVE ranks, unless
 * the link names something of the detailed view (a window, a slice, a search, ranks, a critical path). */
export function showsCompact(ranks: number, s: TimelineState): boolean {
  if (s.tlmode === "compact") return true;
  if (s.tlmode === "detail" || ranks <= COMPACT_ABOVE) return false;
  return !s.tl && !s.tlsel && !s.tlq && !s.tlfind && !s.tlranks && !s.tlcp;
}

export function TimelineTab(props: ComponentProps<typeof Timeline>) {
  const { state } = props;
  const all = props.workers.map((w) => w.worker);
  if (!showsCompact(all.length, state)) {
    const tools = all.length > 1 ? (
      <button class="btn small" onClick={() => props.update({ tlmode: "compact", tlranks: "", tlsel: "", tl: "" } as Partial<TimelineState>)} data-testid="timeline-compact-open" title="One summary row per rank: compute, communication and idle over one step">
        Compact view
      </button>
    ) : null;
    return <Timeline {...props} tools={tools} />;
  }
  const known = new Set(all);
  const expanded = parseRankSet(state.tlranks ?? "").filter((w) => known.has(w)).slice(0, MAX_RANKS);
  const toggle = (worker: string, tl: string) => {
    const next = expanded.includes(worker) ? expanded.filter((w) => w !== worker) : [...expanded, worker].slice(-MAX_RANKS);
    // the first rank shown opens on the step the rows show (its own times); more ranks keep the view
    const view = next.length === 1 && !expanded.length ? tl : next.length ? state.tl : "";
    props.update({ tlmode: "compact", tlranks: writeRankSet(next), tlsel: "", tl: view } as Partial<TimelineState>);
  };
  return (
    <>
      <div class="panel timeline" data-testid="panel-timeline-compact">
        <CompactTimeline run={props.run} span={props.span} labels={props.labels} expanded={expanded} onToggle={toggle} maxRows={expanded.length ? 10 : undefined}
          onDetail={() => props.update({ tlmode: "detail" } as Partial<TimelineState>)} />
      </div>
      {expanded.length ? <Timeline key={expanded.join(",")} {...props} state={{ ...state, tlranks: writeRankSet(expanded) }} /> : null}
    </>
  );
}
