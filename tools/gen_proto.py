#!/usr/bin/env python3
"""Regenerate the protobuf code of both sides from ``proto/``: Python and TypeScript.

    python tools/gen_proto.py            # rewrite tb_paddle_profile/v1/*_pb2.py(i) and frontend/src/gen/
    python tools/gen_proto.py --check    # regenerate into a temporary folder; exit 1 if the committed files differ

Python code comes from ``grpc_tools.protoc`` (``pip install grpcio-tools``); TypeScript code from
``@bufbuild/protoc-gen-es`` run as a protoc plugin (``npm ci`` in ``frontend/`` installs it).
``--only python`` or ``--only ts`` limits the work to one side.
"""

from __future__ import annotations

import argparse
import filecmp
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTO_DIR = ROOT / "proto"
PY_PACKAGE_DIR = Path("tb_paddle_profile") / "v1"  # where protoc puts the Python files, relative to its output
TS_OUT = Path("frontend") / "src" / "gen"
PLUGIN = ROOT / "frontend" / "node_modules" / ".bin" / "protoc-gen-es"


def proto_files() -> list[str]:
    files = sorted(p.relative_to(PROTO_DIR).as_posix() for p in PROTO_DIR.rglob("*.proto"))
    if not files:
        sys.exit(f"no .proto files under {PROTO_DIR.relative_to(ROOT)}")
    return files


def protoc(args: list[str]) -> None:
    cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_DIR}", *args, *proto_files()]
    result = subprocess.run(cmd, cwd=PROTO_DIR, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"protoc failed:\n{result.stderr.strip()}")


def gen_python(out: Path) -> Path:
    """Writes ``<out>/tb_paddle_profile/v1/*_pb2.py(i)``; returns that folder."""
    out.mkdir(parents=True, exist_ok=True)
    protoc([f"--python_out={out}", f"--pyi_out={out}"])
    return out / PY_PACKAGE_DIR


def gen_ts(out: Path) -> Path:
    """Writes ``<out>/tb_paddle_profile/v1/*_pb.ts``; returns ``out``."""
    if not PLUGIN.exists():
        sys.exit("frontend/node_modules/.bin/protoc-gen-es is missing: run `npm ci` in frontend/ first")
    out.mkdir(parents=True, exist_ok=True)
    protoc([f"--plugin=protoc-gen-es={PLUGIN}", f"--es_out={out}", "--es_opt=target=ts"])
    return out


def generated(folder: Path, suffixes: tuple[str, ...]) -> set[str]:
    if not folder.exists():
        return set()
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name.endswith(suffixes)}


def compare(fresh: Path, committed: Path, suffixes: tuple[str, ...]) -> list[str]:
    """Names of files that differ, are missing, or are left over in ``committed``."""
    new, old = generated(fresh, suffixes), generated(committed, suffixes)
    problems = [f"missing: {committed.relative_to(ROOT) / n}" for n in sorted(new - old)]
    problems += [f"not generated any more: {committed.relative_to(ROOT) / n}" for n in sorted(old - new)]
    problems += [
        f"differs: {committed.relative_to(ROOT) / n}"
        for n in sorted(new & old)
        if not filecmp.cmp(fresh / n, committed / n, shallow=False)
    ]
    return problems


PY_SUFFIXES = ("_pb2.py", "_pb2.pyi")
TS_SUFFIXES = ("_pb.ts",)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare a fresh generation with the committed files")
    parser.add_argument("--only", choices=("python", "ts"), help="generate one side only")
    args = parser.parse_args(argv)
    sides = [args.only] if args.only else ["python", "ts"]

    if args.check:
        problems: list[str] = []
        with tempfile.TemporaryDirectory(prefix="gen_proto_") as tmp:
            if "python" in sides:
                problems += compare(gen_python(Path(tmp) / "py"), ROOT / PY_PACKAGE_DIR, PY_SUFFIXES)
            if "ts" in sides:
                problems += compare(gen_ts(Path(tmp) / "ts"), ROOT / TS_OUT, TS_SUFFIXES)
        if problems:
            print("generated protobuf code is out of date (run `python tools/gen_proto.py`):")
            print("\n".join(f"  {p}" for p in problems))
            return 1
        print("generated protobuf code is up to date")
        return 0

    if "python" in sides:
        gen_python(ROOT)
        print(f"wrote {PY_PACKAGE_DIR}/*_pb2.py, *_pb2.pyi")
    if "ts" in sides:
        ts_dir = ROOT / TS_OUT
        for stale in generated(ts_dir, TS_SUFFIXES):  # a removed .proto must not leave its code behind
            (ts_dir / stale).unlink()
        gen_ts(ts_dir)
        print(f"wrote {TS_OUT}/**/*_pb.ts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
