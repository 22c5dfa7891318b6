#!/usr/bin/env python3
"""Check that the committed frontend bundle (tb_paddle_profile/static/) equals a fresh build of frontend/.

    python tools/check_bundle.py           # build into a temporary folder, compare byte for byte; exit 1 on a difference
    python tools/check_bundle.py --write   # rebuild tb_paddle_profile/static/ (same as `npm run build` in frontend/)

Needs Node.js and `npm ci` in frontend/. The build is deterministic (pinned versions in package-lock.json,
no timestamps, no absolute paths), so any difference means the sources changed without a rebuild.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRONTEND = ROOT / "frontend"
STATIC = ROOT / "tb_paddle_profile" / "static"


def build(out_dir: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is not installed: the frontend bundle cannot be built")
    if not (FRONTEND / "node_modules" / ".bin" / "vite").exists():
        sys.exit("frontend/node_modules is missing: run `npm ci` in frontend/ first")
    env = dict(os.environ, TBPP_OUT_DIR=str(out_dir))
    result = subprocess.run([npm, "run", "build"], cwd=FRONTEND, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"the frontend build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")


def files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rebuild the committed bundle instead of checking it")
    args = parser.parse_args(argv)
    if args.write:
        build(STATIC)
        print(f"wrote {STATIC.relative_to(ROOT)}/")
        return 0
    with tempfile.TemporaryDirectory(prefix="tbpp_bundle_") as tmp:
        fresh = Path(tmp) / "static"
        build(fresh)
        new, old = files(fresh), files(STATIC)
        problems = [f"missing from the commit: {n}" for n in sorted(new - old)]
        problems += [f"not built any more: {n}" for n in sorted(old - new)]
        problems += [
            f"differs: {n}" for n in sorted(new & old) if not filecmp.cmp(fresh / n, STATIC / n, shallow=False)
        ]
    if problems:
        print("tb_paddle_profile/static/ does not match a fresh build of frontend/ (run `npm run build` in frontend/):")
        print("\n".join(f"  {p}" for p in problems))
        return 1
    print(f"tb_paddle_profile/static/ matches a fresh build ({', '.join(sorted(new))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
