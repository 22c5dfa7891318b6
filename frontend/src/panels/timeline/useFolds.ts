// The folded ranks and tracks. They live in the selection (the URL's `tlfold`), like the window and the
// search: they stay while zooming and panning, and when another view is shown and this one again.
import { useMemo, useRef } from "preact/hooks";
import { useEvent } from "../../hooks";
import type { TimelineRefs } from "./core";
import type { Folds } from "./layout";
import { parseFolds, writeFolds } from "./layout";

export interface FoldState {
  folds: Folds;
  /** the folds as the last toggle left them (a second toggle before the next render starts from it) */
  now: () => Folds;
  toggleRank: (worker: string) => void;
  toggleTrack: (worker: string, track: number) => void;
  /** folds every rank of the window to its header */
  collapseAll: () => void;
  expandAll: () => void;
  /** unfolds the rank and track of a slice being shown (search, related slices) */
  reveal: (worker: string, track: number) => void;
}

export function useFolds(t: TimelineRefs, tlfold: string, update: (p: { tlfold: string }) => void): FoldState {
  const folds = useMemo<Folds>(() => parseFolds(tlfold), [tlfold]);
  const ref = useRef(folds);
  ref.current = folds;
  const set = (f: Folds) => {
    ref.current = f;
    update({ tlfold: writeFolds(f) });
  };
  const toggleRank = (worker: string) => {
    const f = ref.current;
    const ranks = new Set(f.ranks);
    if (!ranks.delete(worker)) ranks.add(worker);
    set({ ranks, tracks: f.tracks });
  };
  const toggleTrack = (worker: string, track: number) => {
    const f = ref.current;
    const tracks = new Set(f.tracks);
    const k = `${worker}:${track}`;
    if (!tracks.delete(k)) tracks.add(k);
    set({ ranks: f.ranks, tracks });
  };
  const collapseAll = () => {
    const d = t.data.current;
    if (d) set({ ranks: new Set([...ref.current.ranks, ...d.ranks.map((r) => r.worker)]), tracks: ref.current.tracks });
  };
  const expandAll = () => set({ ranks: new Set(), tracks: new Set() });
  const reveal = (worker: string, track: number) => {
    const f = ref.current;
    const k = `${worker}:${track}`;
    if (!f.ranks.has(worker) && !f.tracks.has(k)) return;
    const ranks = new Set(f.ranks);
    const tracks = new Set(f.tracks);
    ranks.delete(worker);
    tracks.delete(k);
    set({ ranks, tracks });
  };
  const now = useEvent(() => ref.current);
  return { folds, now, toggleRank, toggleTrack, collapseAll, expandAll, reveal };
}
