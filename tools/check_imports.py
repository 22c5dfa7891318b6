"""Fail on an import circle inside the package (function-local imports count: they hide circles too).

The layer contract (.importlinter, run by `lint-imports`) says which package may import which; this
says that no set of modules imports itself around in a circle, at any depth. Both run in .ci/run.

    python tools/check_imports.py
"""

from __future__ import annotations

import sys

import grimp

PACKAGE = "tb_paddle_profile"


def cycles(graph) -> list:
    """Strongly connected sets of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.find_modules_directly_imported_by(nxt)))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main() -> int:
    graph = grimp.build_graph(PACKAGE)
    found = cycles(graph)
    for comp in found:
        print("import circle: " + " ↔ ".join(comp))
        for a in comp:
            for b in comp:
                if a != b and graph.direct_import_exists(importer=a, imported=b):
                    lines = graph.get_import_details(importer=a, imported=b)
                    print(f"    {a} -> {b} (l.{', l.'.join(str(d['line_number']) for d in lines)})")
    if found:
        return 1
    print(f"no import circle among {len(graph.modules)} modules of {PACKAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
