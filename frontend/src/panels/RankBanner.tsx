// The banner of a rank the run's cross-rank analysis names (the straggler, a role peer of it), at the top of
// each of the rank's pages (Overview, Operators, Kernels, Memory): the rank_banner route's sentence (built in
// Python: present/display/parallel.rank_banner), and a button that opens Compare with this rank against the
// median of its role peers (the diff route's baseline worker PEERS).
import { useEffect, useState } from "preact/hooks";
import type { SpanKey } from "../api";
import { fetchRankBanner } from "../api";
import { Sentence } from "../display/Sentence";
import type { TimeUnit } from "../format";
import type { View } from "../gen/tb_paddle_profile/v1/display_pb";

interface Props {
  spanKey: SpanKey;
  unit: TimeUnit;
  /** Changes when a file of the run changes state or size: the banner is asked for again. */
  runKey: string;
  /** Opens a rank by its number (the banner's rank links). */
  onRank?: (rank: number) => void;
  /** Opens Compare: this rank against the median of its role peers. */
  onComparePeers?: () => void;
}

/** Rendered once above the rank's panels (not by each panel): one request per rank, span and run change,
 * none when only the page changes; nothing while the analysis is not stored. */
export function RankBanner({ spanKey, unit, runKey, onRank, onComparePeers }: Props) {
  const [view, setView] = useState<View | null>(null);
  const { run, worker, span } = spanKey; // a new object each render: the effect follows its fields
  useEffect(() => {
    const ctl = new AbortController();
    setView(null);
    fetchRankBanner({ run, worker, span }, ctl.signal)
      .then((r) => {
        if (r.kind === "ok") setView(r.value);
      })
      .catch(() => undefined);
    return () => ctl.abort();
  }, [run, worker, span, runKey]);
  const s = view?.sentences[0];
  if (!s) return null;
  return (
    <div class={`notice info level-${s.level || "info"} rank-banner`} role="status" data-testid="rank-banner" data-level={s.level} data-key={s.key}>
      <Sentence sentence={s} timeUnit={unit} showTitle onRank={onRank ? (rank) => onRank(rank) : undefined} />
      {onComparePeers ? (
        <button class="btn rank-banner-compare" onClick={onComparePeers} data-testid="rank-banner-compare" title="Compare: this rank's operators and kernels per step against the median of its role peers (same stage and MP index)">
          Compare with its role peers
        </button>
      ) : null}
    </div>
  );
}
