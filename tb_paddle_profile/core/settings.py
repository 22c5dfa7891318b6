"""The environment settings of the package (``TB_PADDLE_PROFILE_*``): each name once, with its reader.

The modules that use a setting import its name from here, so that the README's table of settings and
this module can be checked against each other (tests/integration/test_package.py).
"""

from __future__ import annotations

import os

CACHE_DIR = "TB_PADDLE_PROFILE_CACHE"  # cache folder or URL; "off": no cache
SIDECAR = "TB_PADDLE_PROFILE_SIDECAR"  # 1: also keep each summary next to its trace
CACHE_MAX_MB = "TB_PADDLE_PROFILE_CACHE_MAX_MB"  # the cache's size bound
RESCAN_S = "TB_PADDLE_PROFILE_RESCAN_S"  # seconds between scans of the logdir
WORKERS = "TB_PADDLE_PROFILE_WORKERS"  # parsing processes of the tab
GROWING_S = "TB_PADDLE_PROFILE_GROWING_S"  # how long a truncated trace counts as still written
START_METHOD = "TB_PADDLE_PROFILE_START_METHOD"  # "spawn" instead of forkserver
MAX_INFLATE_GB = "TB_PADDLE_PROFILE_MAX_INFLATE_GB"  # the bound on a gzip's inflated size
NATIVE = "TB_PADDLE_PROFILE_NATIVE"  # 0: the reader's msgspec path only
WINDOW_MAX_MB = "TB_PADDLE_PROFILE_WINDOW_MAX_MB"  # the timeline's window answer bound
NVLINK_GBPS = "TB_PADDLE_PROFILE_NVLINK_GBPS"  # nominal NVLink bandwidth per direction (GB/s)
NETWORK_GBPS = "TB_PADDLE_PROFILE_NETWORK_GBPS"  # nominal network bandwidth per NIC and direction (GB/s)
CACHE_FSYNC = "TB_PADDLE_PROFILE_CACHE_FSYNC"  # 1: fsync each cache write and its folder (power-loss durability)
PARSE_LOG = "TB_PADDLE_PROFILE_PARSE_LOG"  # tests and benchmarks: a file that counts parses


def text(name: str, default: str = "") -> str:
    """The setting's value, stripped ("" when unset)."""
    return os.environ.get(name, default).strip()


def flag(name: str) -> bool:
    """A yes/no setting: 1, true, yes or on."""
    return text(name).lower() in {"1", "true", "yes", "on"}


def megabytes(name: str, default_mb: float) -> int:
    """A size bound given in MB, in bytes (0: none); ``default_mb`` when unset or not a number."""
    value = text(name)
    try:
        mb = float(value) if value else default_mb
    except ValueError:
        mb = default_mb
    return max(0, int(mb * (1 << 20)))


def note_parse(file_name: str) -> None:
    """With TB_PADDLE_PROFILE_PARSE_LOG set (tests, benchmarks), one line per parse is appended to that
    file, from whichever process parses: how the tests count parses across worker processes."""
    target = os.environ.get(PARSE_LOG)
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(file_name + "\n")
