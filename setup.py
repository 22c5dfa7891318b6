"""Packaging of tb_paddle_profile: a TensorBoard plugin and CLI for PaddlePaddle profiler traces."""

import os
import re
from pathlib import Path

from setuptools import Extension, find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(r'__version__ = "([^"]+)"', (HERE / "tb_paddle_profile" / "core" / "version.py").read_text()).group(
    1
)

setup(
    name="tb_paddle_profile",
    version=VERSION,
    description="TensorBoard plugin and CLI for PaddlePaddle profiler traces (paddle.profiler Chrome-tracing JSON)",
    long_description=(HERE / "README.md").read_text() if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.9",
    packages=find_packages(include=["tb_paddle_profile", "tb_paddle_profile.*"]),
    package_data={"tb_paddle_profile": ["static/*", "static/**/*", "v1/*.pyi"]},
    install_requires=[
        "msgspec>=0.18",  # typed JSON decoding straight into structs: the parse floor and our reader
        "numpy>=1.22",  # columnar event tables
        "protobuf>=7.35.1",  # the summary schema (generated code needs this runtime or newer)
        "fsspec>=2023.1",  # remote logdirs (s3://, gs://, hdfs://, ...)
        "werkzeug>=2.0",  # the plugin's WSGI routes (TensorBoard uses it too)
        "tensorboard>=2.12",  # the host of the tab: a plain install, then `tensorboard --logdir` works
        "pandas>=1.5",  # the Python API's frames (tbp.load / tbp.load_run); imported only by the API
        "pyyaml>=5.1",  # `whatif --model-config FILE.yaml`: PaddleNLP / PaddleFleetX model configs for MFU
    ],
    extras_require={
        "s3": ["s3fs>=2025.1"],
        "gcs": ["gcsfs"],
        # kept so that old commands (`pip install '.[tensorboard]'`) still work; TensorBoard is now required
        "tensorboard": [],
        # preprocess --dask: the per-file job mapped over a Dask cluster's workers (scheduling, worker
        # deaths rescheduled on other workers, a bound on retries); made for this, so not written here
        "dask": ["distributed>=2024.1"],
        "test": [
            "pytest>=7",
            "paddlepaddle==3.3.1",  # the slow parity test runs real training with the profiler
            "playwright>=1.40",  # drives Debian's Chromium in the browser tests (no browser download)
            "moto[server]>=5",  # a real S3-compatible server on 127.0.0.1 for remote logdirs
            "s3fs>=2025.1",  # (a floor: without it pip backtracks to a 2019 s3fs)
            "grpcio-tools==1.85.1",  # protoc for tools/gen_proto.py --check (pinned: output must not drift)
            "hypothesis>=6.100",  # the reader's fuzz test (tests/unit/test_fuzz_reader.py)
            "distributed>=2024.1",  # a real Dask scheduler and workers (tests/integration/test_dask_preprocess.py)
            "nbclient>=0.7",  # runs examples/api.ipynb in tests/integration/test_api.py
            "nbformat>=5",
            "ipykernel>=6",  # the notebook's Python kernel
            "import-linter>=2.1",  # .importlinter: the layers import one way (and grimp for circles)
            "ruff==0.17.6",  # ruff.toml: the lint and the formatting .ci/run checks (pinned: the style moves)
            "mypy==2.4.1",  # mypy.ini: the type check .ci/run runs (pinned: a new release finds new errors)
        ],
    },
    # The reader's native fast path (tb_paddle_profile/trace/_scan.c, plain C against Python's API, no
    # other library). Optional: without a C compiler the install still succeeds and the reader
    # decodes everything with msgspec (same tables, slower).
    ext_modules=[
        Extension(
            "tb_paddle_profile.trace._scan",
            ["tb_paddle_profile/trace/_scan.c"],
            optional=True,
            extra_compile_args=["-O2"] if os.name != "nt" else [],
        )
    ],
    entry_points={
        "console_scripts": ["tb-paddle-profile=tb_paddle_profile.cli:main"],
        "tensorboard_plugins": ["paddle_profile=tb_paddle_profile.plugin.tb_plugin:PaddleProfilePlugin"],
    },
)
