"""The sidebar's groups of a run's files (WorkerEntry.group, present/display/files.py): the panel lists a run's
files in the groups the runs route gives and makes none of its own (issue 25: the frontend only draws)."""

from tb_paddle_profile.present.display.files import FLAT_FILES, group_files
from tb_paddle_profile.v1 import plugin_pb2


def _entry(n, spans=1, host=lambda i: "", rank=lambda i: i):
    e = plugin_pb2.RunEntry(run="r")
    for i in range(n):
        w = e.workers.add(worker=f"w{i}", rank=rank(i), hostname=host(i))
        for s in range(spans):
            w.spans.add(span=str(s))
    return e


def _groups(e):
    out = {}
    for w in e.workers:
        out.setdefault(w.group, []).append(w.rank)
    return out


def test_a_few_files_are_listed_flat():
    e = _entry(FLAT_FILES)
    group_files(e)
    assert {w.group for w in e.workers} == {""}
    e = _entry(FLAT_FILES // 2, spans=3)  # files, not workers, count
    group_files(e)
    assert all(w.group for w in e.workers)


def test_ranks_in_blocks_of_16_or_more_so_that_32_blocks_at_most():
    for n, block in ((160, 16), (512, 16), (513, 32), (1024, 32), (4096, 128)):
        e = _entry(n)
        group_files(e)
        groups = _groups(e)
        assert len(groups) == -(-n // block) <= 32
        for title, ranks in groups.items():
            lo = ranks[0] // block * block
            assert title == f"ranks {lo}–{lo + block - 1}" and all(lo <= r < lo + block for r in ranks)


def test_by_host_where_the_names_tell_hosts():
    e = _entry(24, host=lambda i: f"node{i // 8}" if i < 16 else "", rank=lambda i: -1)
    group_files(e)
    assert list(_groups(e)) == ["host node0", "host node1", "no host in the name"]
    e = _entry(20, rank=lambda i: i if i < 10 else -1)
    group_files(e)
    assert list(_groups(e)) == ["ranks 0–15", "other workers"]
