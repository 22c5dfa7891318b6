"""The plugin's worker processes: forked from a forkserver that imported the engine once, so that a
worker starts with it loaded and is not a fork of the threaded TensorBoard process; "spawn" when
asked for (or where there is no forkserver)."""

import os
import subprocess
import sys

import pytest

from support.paths import REPO

# Run as a script, as the `tensorboard` script is.
_MAIN = r"""
import os, sys

def job(path):
    preloaded = "tb_paddle_profile.analysis.summarize" in sys.modules
    from tb_paddle_profile.analysis.summarize import summarize_file
    return len(summarize_file(path).operators.operators), preloaded, os.getppid() != PARENT

PARENT = int(os.environ.get("TEST_PARENT", os.getpid()))
if __name__ == "__main__":
    os.environ["TEST_PARENT"] = str(os.getpid())
    import concurrent.futures
    from tb_paddle_profile.core.pool import process_context
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
    proc = subprocess.run(
        [sys.executable, str(script), str(trace)], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    used, ops, preloaded, not_children = proc.stdout.split()
    assert used == method and int(ops) > 0
    # forkserver: the engine was loaded before the job asked for it, and the workers are children
    # of the server, not of the (threaded) parent; spawn: neither
    expected = str(method == "forkserver")
    assert (preloaded, not_children) == (expected, expected)


_ENV = r"""
import os
from tb_paddle_profile.core.pool import process_pool

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
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "set later", proc.stderr[-2000:]


# ------------------------------------------------------------------ WorkerPool: one job per known process


def wait_for_file(path):
    """A job that runs until `path` exists (the test decides how long a job is in progress)."""
    import time

    while not os.path.exists(path):
        time.sleep(0.02)
    return os.getpid()


def fail_with_a_bug():
    return {}["missing"]


def _pid_gone(pid):
    return not os.path.exists(f"/proc/{pid}")


def _started(job, timeout=60):
    assert job.started.wait(timeout), "the job did not start"
    return job.pid


def test_a_killed_worker_fails_only_its_own_job(tmp_path):
    import signal

    from tb_paddle_profile.core.pool import WorkerDied, WorkerPool

    pool = WorkerPool(2)
    try:
        a = pool.submit(wait_for_file, str(tmp_path / "a"))
        b = pool.submit(wait_for_file, str(tmp_path / "b"))
        pid_a, pid_b = _started(a), _started(b)
        assert pid_a != pid_b and sorted(pool.pids()) == sorted([pid_a, pid_b])
        os.kill(pid_a, signal.SIGKILL)
        with pytest.raises(WorkerDied) as died:
            a.future.result(60)
        assert died.value.pid == pid_a and died.value.exitcode == -signal.SIGKILL
        assert "SIGKILL" in str(died.value)
        assert not b.future.done()
        (tmp_path / "b").touch()
        assert b.future.result(60) == pid_b
        # the survivor takes the next job; the dead one is gone, not a zombie
        (tmp_path / "c").touch()
        assert pool.submit(wait_for_file, str(tmp_path / "c")).future.result(60) == pid_b
        assert _pid_gone(pid_a) and pool.pids() == [pid_b]
    finally:
        pool.shutdown()


def test_a_job_can_be_cancelled_and_shutdown_ends_jobs_in_progress(tmp_path):
    from tb_paddle_profile.core.pool import JobCancelled, WorkerPool

    pool = WorkerPool(2)
    try:
        a = pool.submit(wait_for_file, str(tmp_path / "never-a"))
        b = pool.submit(wait_for_file, str(tmp_path / "never-b"))
        pid_a, pid_b = _started(a), _started(b)
        assert pool.cancel(a)
        with pytest.raises(JobCancelled):
            a.future.result(60)
        assert _pid_gone(pid_a) and not b.future.done()
    finally:
        pool.shutdown()  # returns with b still "running": its process is ended
    with pytest.raises(JobCancelled):
        b.future.result(60)
    assert _pid_gone(pid_b) and pool.pids() == []
    with pytest.raises(RuntimeError):
        pool.submit(wait_for_file, str(tmp_path))


def test_a_job_that_raises_reports_its_traceback_and_keeps_its_process(tmp_path):
    from tb_paddle_profile.core.pool import JobError, WorkerPool

    pool = WorkerPool(1)
    try:
        job = pool.submit(fail_with_a_bug)
        with pytest.raises(JobError) as err:
            job.future.result(60)
        assert err.value.type_name == "KeyError" and "fail_with_a_bug" in err.value.traceback_text
        (tmp_path / "go").touch()
        assert pool.submit(wait_for_file, str(tmp_path / "go")).future.result(60) == job.pid
    finally:
        pool.shutdown()
