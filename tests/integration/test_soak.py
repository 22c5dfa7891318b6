"""A bounded soak (issue 29): many small traces and many clients against a real TensorBoard on 127.0.0.1.

bench/bench_soak.py's traces and clients, at a size a test can afford: every file loads with the clients
asking all along, no request fails, and once every file is loaded the memory of the server's process tree
(TensorBoard and its worker processes) stays flat over rounds of the clients' requests."""
from __future__ import annotations

import importlib.util
import time

from support.paths import REPO
from support.plugin_testlib import tensorboard_process

FILES, CLIENTS = 1000, 20
ROUNDS, ROUND_S = 3, 4.0


def _bench_soak():
    spec = importlib.util.spec_from_file_location("bench_soak", REPO / "bench" / "bench_soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_many_small_files_and_clients_load_without_errors_in_flat_memory(tmp_path):
    soak = _bench_soak()
    names = soak.write_logdir(tmp_path / "logs", FILES)
    with tensorboard_process(tmp_path / "logs", {"TB_PADDLE_PROFILE_CACHE": str(tmp_path / "cache")},
                             tmp_path, timeout=120) as (base, proc, log):
        clients = soak.Clients(base, names, CLIENTS)
        for t in clients.threads:
            t.start()
        try:
            deadline = time.monotonic() + 240
            while soak.loaded(base) != (FILES, FILES):
                assert time.monotonic() < deadline, f"not loaded: {soak.loaded(base)}\n{log.read_text()[-3000:]}"
                time.sleep(0.5)
            loaded = soak.tree_rss_mb(proc.pid)
            rounds = []
            for _ in range(ROUNDS):
                answered = clients.ok
                time.sleep(ROUND_S)
                assert clients.ok > answered  # the clients are being answered
                rounds.append(soak.tree_rss_mb(proc.pid))
        finally:
            clients.stop.set()
            for t in clients.threads:
                t.join(timeout=90)
        assert clients.errors == 0, clients.error_kinds
        # generous: a round's memos and the allocator's slack, not a leak of one request's worth each
        assert max(rounds) <= loaded * 1.15 + 20, (loaded, rounds)
        assert rounds[-1] <= rounds[0] * 1.05 + 10, (loaded, rounds)
