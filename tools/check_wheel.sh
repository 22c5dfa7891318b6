#!/usr/bin/env bash
# The package as a user gets it: build the wheel, install it in a fresh venv (dependencies from the
# package registry), run the main job from outside the source tree, and start TensorBoard on the
# sample logdir to see that the tab is listed and a plugin route answers. Called by .ci/run after the
# tests; needs the registry. Nothing is written in the repository (the cache goes to a temp folder).
#
# Usage: bash tools/check_wheel.sh [PYTHON]   (default python3)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PY="${1:-python3}"
WORK="$(mktemp -d)"
TB_PID=""
cleanup() {
  if [ -n "$TB_PID" ]; then kill "$TB_PID" 2>/dev/null || true; wait "$TB_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "check_wheel: building the wheel"
# the build itself happens in a copy of the tracked files, so no build/ or egg-info appears in the repo
mkdir "$WORK/src"
"$PY" - "$REPO" "$WORK/src" <<'COPY'
import shutil, subprocess, sys
from pathlib import Path
repo, dst = Path(sys.argv[1]), Path(sys.argv[2])
names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                       check=True, capture_output=True).stdout.decode().split("\0")
for name in filter(None, names):
    if (repo / name).is_file():  # a file deleted but not yet staged is not copied
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / name, dst / name)
COPY
"$PY" -m pip wheel --quiet --no-deps "$WORK/src" -w "$WORK/dist"
WHEEL="$(ls "$WORK"/dist/tb_paddle_profile-*.whl)"
echo "check_wheel: $(basename "$WHEEL")"
if "$PY" -m zipfile -l "$WHEEL" | grep -q 'synth'; then
  echo "check_wheel: the wheel holds the trace generator (synth): it must not ship" >&2; exit 1
fi

echo "check_wheel: installing it in a fresh venv"
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --upgrade pip
"$WORK/venv/bin/python" -m pip install --quiet "$WHEEL"

cd "$WORK"  # not the repository: the source tree must not be what is imported
export TB_PADDLE_PROFILE_CACHE="$WORK/cache"
where="$("$WORK/venv/bin/python" -c 'import tb_paddle_profile, os; print(os.path.dirname(tb_paddle_profile.__file__))')"
case "$where" in
  "$WORK/venv/"*) ;;
  *) echo "check_wheel: tb_paddle_profile was imported from $where, not from the venv" >&2; exit 1 ;;
esac
if "$WORK/venv/bin/python" -c 'import tbp_synth' 2>/dev/null; then
  echo "check_wheel: tbp_synth is importable from the installed venv" >&2; exit 1
fi

echo "check_wheel: tb-paddle-profile summary examples/profiler_log/gpt-2rank"
"$WORK/venv/bin/tb-paddle-profile" summary "$REPO/examples/profiler_log/gpt-2rank" > "$WORK/summary.txt"
for want in "Overview Summary" "Operator Summary" "Memory Summary" "rank0_time_" "rank1_time_"; do
  grep -q "$want" "$WORK/summary.txt" || { echo "check_wheel: the summary lacks '$want'" >&2; head -40 "$WORK/summary.txt" >&2; exit 1; }
done
# the two ranks' Operator tables are the ones Paddle printed (the example keeps them beside each trace)
for txt in "$REPO"/examples/profiler_log/gpt-2rank/*.summary.CPUTotal.ms.txt; do
  line="$(grep -m1 -E '^[a-z_]+ dygraph ' "$txt")"
  grep -qF -- "$line" "$WORK/summary.txt" || { echo "check_wheel: '$line' of $(basename "$txt") not in the summary" >&2; exit 1; }
done

echo "check_wheel: the Python API (tbp.load, tbp.load_run) from the venv"
"$WORK/venv/bin/python" - "$REPO/examples/profiler_log" "$WORK/summary.txt" <<'API'
import sys
import tb_paddle_profile as tbp
logdir, summary = sys.argv[1], open(sys.argv[2]).read()
p = tbp.load(f"{logdir}/gpt-2rank/" + next(n for n in __import__("os").listdir(f"{logdir}/gpt-2rank")
                                          if n.startswith("rank0_") and n.endswith(".paddle_trace.json")))
assert len(p.operators) > 0 and p.text() in summary, "check_wheel: tbp.load differs from the CLI"
run = tbp.load_run(f"{logdir}/gpt-2rank")
assert list(run.ranks["rank"]) == [0, 1], run.ranks
print("check_wheel: api ok:", len(p.operators), "operator rows;", len(run.ranks), "ranks")
API

echo "check_wheel: tensorboard --logdir examples/profiler_log"
PORT="$("$WORK/venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$WORK/venv/bin/tensorboard" --logdir "$REPO/examples/profiler_log" --host 127.0.0.1 --port "$PORT" \
  > "$WORK/tensorboard.log" 2>&1 &
TB_PID=$!
BASE="http://127.0.0.1:$PORT"
"$WORK/venv/bin/python" - "$BASE" "$WORK/tensorboard.log" <<'EOF'
import json, sys, time, urllib.request
base, log = sys.argv[1], sys.argv[2]

def get(path):
    with urllib.request.urlopen(base + path, timeout=30) as r:
        return r.read()

deadline = time.time() + 120
while True:
    try:
        listing = json.loads(get("/data/plugins_listing"))
        break
    except OSError:
        if time.time() > deadline:
            sys.exit("check_wheel: tensorboard did not answer:\n" + open(log).read()[-3000:])
        time.sleep(0.5)
assert "paddle_profile" in listing, f"check_wheel: paddle_profile not in plugins_listing: {sorted(listing)}"
deadline = time.time() + 120
while True:  # the plugin scans the logdir in the background
    runs = json.loads(get("/data/plugin/paddle_profile/runs?format=json"))
    names = {r["run"] for r in runs.get("runs", [])}
    if {"gpt-2rank", "gpt-single"} <= names:
        break
    if time.time() > deadline:
        sys.exit(f"check_wheel: the runs route lists {sorted(names)}, not gpt-2rank and gpt-single")
    time.sleep(0.5)
assert get("/data/plugin/paddle_profile/index.js")[:200].strip(), "check_wheel: the tab's bundle is empty"
print("check_wheel: plugins_listing has paddle_profile; runs:", sorted(names))
EOF
echo "check_wheel: ok"
