// Small hooks shared by the panels.
import { useCallback, useRef } from "preact/hooks";

/**
 * A function that keeps one identity for the component's life and always runs the latest `fn` (the one of
 * the last render): for the canvas views' imperative helpers (redraw, load a page) and for the bodies of
 * effects that must run when some values change but read others as they are then (React's
 * useEffectEvent). Listed in an effect's dependencies, it never makes the effect run again.
 */
export function useEvent<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  const ref = useRef(fn);
  ref.current = fn;
  return useCallback((...args: A) => ref.current(...args), []);
}
