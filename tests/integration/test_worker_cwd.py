"""Worker processes never import from the current folder: a file there named like a standard module
(inspect.py, which numpy imports) must not replace the real one in the workers (issue 27.7)."""

import os
import subprocess
import sys

import pytest

from support.paths import REPO

_MAIN = r"""
import sys

def job(path):
    import inspect
    from tb_paddle_profile.analysis.summarize import summarize_file
    return inspect.__file__, "" in sys.path, len(summarize_file(path).operators.operators)

if __name__ == "__main__":
    from tb_paddle_profile.core.pool import WorkerPool
    pool = WorkerPool(1)
    try:
        where, has_cwd, n = pool.submit(job, sys.argv[1]).future.result(timeout=120)
    finally:
        pool.shutdown()
    print(where)
    print(has_cwd, n)
"""


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_module_in_the_current_folder_does_not_shadow_the_standard_library_in_workers(tmp_path, method):
    script_dir, cwd = tmp_path / "script", tmp_path / "cwd"
    script_dir.mkdir()
    cwd.mkdir()
    (script_dir / "main.py").write_text(_MAIN)
    (cwd / "inspect.py").write_text("raise ImportError('the current folder was imported from')\n")
    trace = sorted((REPO / "examples" / "profiler_log" / "gpt-single").glob("*.paddle_trace.json"))[0]
    env = dict(os.environ, TB_PADDLE_PROFILE_START_METHOD=method)
    proc = subprocess.run(
        [sys.executable, str(script_dir / "main.py"), str(trace)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    where, rest = proc.stdout.splitlines()[-2:]
    assert not where.startswith(str(cwd)), where
    assert rest.split()[0] == "False"
    assert int(rest.split()[1]) > 0
