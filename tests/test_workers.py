"""The plugin's worker processes: forked from a forkserver that imported the engine once, so that a
worker starts with it loaded and is not a fork of the threaded TensorBoard process; "spawn" when
asked for (or where there is no forkserver)."""
import os
import subprocess
import sys

import pytest

from conftest import REPO

# Run as a script, as the `tensorboard` script is.
_MAIN = r"""
import os, sys

def job(path):
    preloaded = "tb_paddle_profile.engine" in sys.modules
    from tb_paddle_profile.engine import summarize_file
    return len(summarize_file(path).operators.operators), preloaded, os.getppid() != PARENT

PARENT = int(os.environ.get("TEST_PARENT", os.getpid()))
if __name__ == "__main__":
    os.environ["TEST_PARENT"] = str(os.getpid())
    import concurrent.futures
    from tb_paddle_profile.workers import process_context
    ctx = process_context()
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        done = [f.result() for f in [pool.submit(job, sys.argv[1]) for _ in range(4)]]
    print(ctx.get_start_method(), min(d[0] for d in done), all(d[1] for d in done), all(d[2] for d in done))
"""


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_workers_start_with_the_engine_loaded_and_not_as_forks_of_the_parent(tmp_path, method):
    script = tmp_path / "main.py"
    script.write_text(_MAIN)
    trace = sorted((REPO / "examples" / "profiler_log" / "gpt-single").glob("*.paddle_trace.json"))[0]
    env = dict(os.environ, TB_PADDLE_PROFILE_START_METHOD=method)
    proc = subprocess.run([sys.executable, str(script), str(trace)], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    used, ops, preloaded, not_children = proc.stdout.split()
    assert used == method and int(ops) > 0
    # forkserver: the engine was loaded before the job asked for it, and the workers are children
    # of the server, not of the (threaded) parent; spawn: neither
    expected = str(method == "forkserver")
    assert (preloaded, not_children) == (expected, expected)


_ENV = r"""
import os
from tb_paddle_profile.workers import process_pool

def read(name):
    return os.environ.get(name, "")

if __name__ == "__main__":
    with process_pool(1) as pool:  # starts the forkserver with this environment
        assert pool.submit(read, "TBPP_TEST_CREDENTIAL").result() == ""
    os.environ["TBPP_TEST_CREDENTIAL"] = "set later"
    with process_pool(1) as pool:
        print(pool.submit(read, "TBPP_TEST_CREDENTIAL").result())
"""


def test_workers_see_the_environment_of_when_their_pool_started(tmp_path):
    """A forkserver keeps the environment it started with; credentials for a remote logdir set
    afterwards must still reach the workers (a test found an S3 logdir failing without this)."""
    script = tmp_path / "env.py"
    script.write_text(_ENV)
    env = {k: v for k, v in os.environ.items() if k != "TBPP_TEST_CREDENTIAL"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "set later", proc.stderr[-2000:]
