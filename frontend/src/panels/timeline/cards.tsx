// The detailed timeline's small components: the fold buttons over the label column, the tracks as text,
// and the details panel's cards (a slice's details, a collective's instance, a box's sums).
import type { TimelineEvent, TimelineInstance, TimelineRange } from "../../gen/tb_paddle_profile/v1/timeline_pb";
import type { Decoded } from "./data";
import { fmtDur } from "./data";
import { counterScale } from "./lanes";
import type { Folds, Row } from "./layout";
import { layout, RULER_H } from "./layout";
import { MAX_RANKS } from "./ranks";

/** "worker:track" of the tracks drawn as `kind` rows (lanes: unfolded; fold: folded), in drawing order. */
export function trackIds(rows: Row[], kind: Row["kind"]): string {
  const out: string[] = [];
  for (const r of rows) if (r.kind === kind && r.first) out.push(`${r.worker}:${r.track}`);
  return out.join(",");
}

/** A rank header's or a track label's button over the canvas: click, Enter or Space folds or unfolds. */
export function FoldButton({ row, onToggle }: { row: Row; onToggle: () => void }) {
  const rank = row.kind === "rank";
  const name = rank ? row.label : `${row.worker} · ${row.label}`;
  const h = rank ? row.h : Math.min(row.h, 17);
  return (
    <button
      type="button"
      class={`tl-fold${rank ? " tl-fold-rank" : ""}`}
      style={{ top: `${RULER_H + row.y}px`, height: `${h}px` }}
      onClick={onToggle}
      aria-expanded={!row.folded}
      aria-label={name}
      title={`${row.folded ? "Unfold" : "Fold"} ${name}`}
      data-testid={rank ? "timeline-fold-rank" : "timeline-fold-track"}
      data-worker={row.worker}
      data-track={rank ? undefined : String(row.track)}
      data-folded={row.folded ? "1" : "0"}
    />
  );
}

export function splitSel(s: string): [string, number | null] {
  const i = s.lastIndexOf(":");
  if (i < 0) return ["", null];
  const id = Number(s.slice(i + 1));
  return [s.slice(0, i), Number.isInteger(id) ? id : null];
}

/** The tracks as text (hidden visually small): what the canvas shows, for assistive tools and tests. */
export function TrackList({ data, folds, labels }: { data: Decoded | null; folds: Folds; labels: Map<string, string> }) {
  if (!data) return null;
  return (
    <>
    <ul class="tl-tracks" data-testid="timeline-tracks">
      {data.ranks.map((r) =>
        r.tracks.map((t) => (
          <li
            data-worker={r.worker}
            data-track={t.id}
            data-kind={t.kind === 2 ? "gpu" : "host"}
            data-events={String(t.events)}
            data-fold={folds.ranks.has(r.worker) ? "rank" : folds.tracks.has(`${r.worker}:${t.id}`) ? "track" : ""}
          >
            {`${labels.get(r.worker) || (r.rank >= 0 ? `rank ${r.rank}` : r.worker)} · ${t.label} · ${Number(t.events).toLocaleString()} events`}
          </li>
        )),
      )}
    </ul>
    <ul class="tl-tracks" data-testid="timeline-counters">
      {layout(data, folds, labels).rows.filter((row) => row.kind === "counter").map((row) => {
        const c = data.ranks[row.rank]?.counters[row.counter ?? 0];
        const sc = c ? counterScale(c) : null; // the lane's axis: its bottom and top as drawn
        return (
          <li data-worker={row.worker} data-counter={String(row.counter)} data-testid="timeline-counter" data-lo={sc?.loText} data-hi={sc?.hiText}>
            {`${labels.get(row.worker) || row.worker} · ${row.label}${sc ? ` · ${sc.loText} to ${sc.hiText}` : ""}`}
          </li>
        );
      })}
    </ul>
    </>
  );
}

export function Details({ e, rankName, onJump, onTable, onClose }: { e: TimelineEvent; rankName: string; onJump: (worker: string, id: number) => void; onTable: (view: string, name: string) => void; onClose: () => void }) {
  const dur = Number(e.endNs - e.startNs);
  const isDevice = e.type === "Kernel" || e.type === "Memcpy" || e.type === "Memset";
  return (
    <section class="card tl-details" data-testid="timeline-details">
      <header class="card-head">
        <h3 data-testid="timeline-detail-name" title={e.name}>{e.name}</h3>
        <div class="card-tools">
          <button class="btn small" onClick={onClose} data-testid="timeline-details-close" title="Deselect (Esc)">Close</button>
        </div>
      </header>
      <div class="card-body">
        <table class="tl-kv">
          <tbody>
            <tr><th>Type</th><td data-key="type">{e.type}</td></tr>
            <tr><th>Duration</th><td data-key="duration">{fmtDur(dur)}</td></tr>
            <tr><th>Start</th><td data-key="start">{fmtDur(Number(e.startNs))}</td></tr>
            <tr><th>Track</th><td data-key="track">{`${e.worker} · ${e.trackLabel} · row ${e.depth + 1}`}</td></tr>
            {e.correlationId >= 0n ? <tr><th>Correlation id</th><td data-key="correlation id">{e.correlationId.toString()}</td></tr> : null}
            {e.operator ? <tr><th>Operator</th><td data-key="operator">{e.operator}</td></tr> : null}
            {e.args.map((a) => (
              <tr><th>{a.key}</th><td data-key={a.key}>{a.value}</td></tr>
            ))}
          </tbody>
        </table>
        {e.related.length ? (
          <div class="tl-related">
            {e.related.map((r) => (
              <button class="btn small" onClick={() => onJump(r.worker, Number(r.id))} data-relation={r.relation} title={r.name}>
                {`${r.relation}: ${r.name.length > 60 ? `${r.name.slice(0, 59)}…` : r.name}`}
              </button>
            ))}
          </div>
        ) : null}
        <div class="tl-related">
          {isDevice && e.type === "Kernel" ? (
            <button class="btn small" data-testid="timeline-to-kernels" onClick={() => onTable("kernels", e.name)} title={`Switches to ${rankName}'s Kernels view`}>{`Show in Kernels table of ${rankName}`}</button>
          ) : null}
          {e.operator ? (
            <button class="btn small" data-testid="timeline-to-operators" onClick={() => onTable("operators", e.operator)} title={`Switches to ${rankName}'s Operators view`}>{`Show operator in Operators table of ${rankName}`}</button>
          ) : null}
        </div>
      </div>
    </section>
  );
}

/**
 * The selected collective's matched instance (timeline_instance, from the cross-rank analysis' matched
 * table): every member rank with its arrival (after the first member's: the route's arrival_ns), wait and duration, the
 * transfer; the last arrival marked; a member's row selects its slice; the members not shown can be added.
 */
export function InstanceCard(props: { inst: TimelineInstance; shown: string[]; rankName: (w: string) => string; canAdd: boolean; onJump: (worker: string, id: number) => void; onShow: () => void }) {
  const { inst } = props;
  const hidden = inst.members.filter((m) => m.worker && !props.shown.includes(m.worker));
  return (
    <section class="card tl-instance" data-testid="timeline-instance" data-members={inst.members.length} data-hidden={hidden.length}>
      <header class="card-head">
        <h3 title={inst.name}>{`${inst.kind.replace(/_/g, " ")} · step ${inst.step} · ${inst.members.length} ranks · transfer ${fmtDur(Number(inst.transferNs))}`}</h3>
        {hidden.length ? (
          <div class="card-tools">
            <button class="btn small" onClick={props.onShow} disabled={!props.canAdd} data-testid="timeline-instance-show" title={props.canAdd ? "Add the member ranks that are not shown to the timeline" : `At most ${MAX_RANKS} ranks at once`}>
              {`Show ${hidden.length} more member rank${hidden.length > 1 ? "s" : ""}`}
            </button>
          </div>
        ) : null}
      </header>
      <div class="card-body">
        <table class="tl-sums" data-testid="timeline-instance-members">
          <thead>
            <tr><th>Rank</th><th>Arrival</th><th>Wait</th><th>Duration</th><th>Transfer</th></tr>
          </thead>
          <tbody>
            {inst.members.map((m) => (
              <tr data-testid="timeline-instance-member" data-rank={m.rank} data-worker={m.worker} data-last={m.last ? "1" : "0"} data-shown={props.shown.includes(m.worker) ? "1" : "0"}
                data-wait-ns={String(m.waitNs)} data-duration-ns={String(m.durationNs)} data-transfer-ns={String(inst.transferNs)} data-start-unix-ns={String(m.startUnixNs)}>
                <td>
                  {m.found ? (
                    <button class="btn-link" onClick={() => props.onJump(m.worker, Number(m.id))} title={`Select its slice on ${props.rankName(m.worker)}`}>{props.rankName(m.worker)}</button>
                  ) : (
                    <span class="muted" title="not shown on the timeline">{m.worker ? props.rankName(m.worker) : `rank ${m.rank}`}</span>
                  )}
                  {m.direction ? <span class="muted">{` · ${m.direction}`}</span> : null}
                  {m.last ? <b class="tl-last">{" · last"}</b> : null}
                </td>
                <td>{`+${fmtDur(Number(m.arrivalNs))}`}</td>
                <td>{fmtDur(Number(m.waitNs))}</td>
                <td>{fmtDur(Number(m.durationNs))}</td>
                <td>{fmtDur(Number(inst.transferNs))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

export function RangeSums({ r, onClose }: { r: TimelineRange; onClose: () => void }) {
  return (
    <section class="card tl-range" data-testid="timeline-range">
      <header class="card-head">
        <h3>{`Selection: ${fmtDur(Number(r.endNs - r.startNs))}, ${Number(r.events).toLocaleString()} slices`}</h3>
        <div class="card-tools">
          <button class="btn small" onClick={onClose}>Close</button>
        </div>
      </header>
      <div class="card-body tl-range-body">
        <table class="tl-sums">
          <thead>
            <tr><th>Name</th><th>Type</th><th>Count</th><th>Total</th><th>In range</th></tr>
          </thead>
          <tbody>
            {r.rows.slice(0, 200).map((x) => (
              <tr>
                <td title={x.name}>{x.name}</td>
                <td>{x.type}</td>
                <td>{Number(x.count).toLocaleString()}</td>
                <td>{fmtDur(Number(x.totalNs))}</td>
                <td>{fmtDur(Number(x.overlapNs))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
