"""The Python API: a trace's views and a run's cross-rank analysis as pandas DataFrames.

    import tb_paddle_profile as tbp
    p = tbp.load("profiler_log/rank0_time_....paddle_trace.json")
    p.operators            # one row per operator (typed: ns int64, fractions float64); p.operator_details inner rows
    p.table("operators")   # the display table as the CLI prints it (every row, trees by depth)
    print(p.text())        # what `tb-paddle-profile summary` prints
    r = tbp.load_run("profiler_log/gpt-2rank")
    r.ranks, r.steps, r.collectives, r.waits, r.verdict, r.step_times
    print(r.text())        # what `tb-paddle-profile parallel` prints

Nothing is computed here. A trace is loaded by the CLI's loader and per-file job (``pipeline.batch``,
``jobs.run_job``), through the same cache as the CLI and the TensorBoard tab, so a trace the tab or
the CLI has parsed is not parsed again, and the reverse. Each frame is one table of the display
model (``display.summary.summary_display`` / ``display.parallel.parallel_display``), turned into a
DataFrame by ``display.export.to_frame``: the rows, order and ratios the CLI prints and the panels
show; the attributes give them as data (:func:`tidy`: typed columns, one level of a tree per frame,
parent ids), ``table(key)`` / ``views`` as displayed. The few raw frames (the memory curve, the rank × step matrices) are columns of the Summary /
RunParallel messages, reshaped, with no arithmetic. The text is the CLI's own renderer.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from tb_paddle_profile.pipeline import batch
from tb_paddle_profile.present.display.export import display_frames, sentence_frame, tidy

__all__ = ["LoadError", "Profile", "Run", "load", "load_all", "load_run", "tidy"]


class LoadError(Exception):
    """A trace or a run could not be loaded. ``str(err)`` is one line naming the file and the reason,
    as the CLI prints it (a bug of the tool says so)."""


# ------------------------------------------------------------------ loading (the CLI's loader)


def _options(cache_dir, cache: bool, jobs) -> batch.LoadOptions:
    return batch.LoadOptions(cache_dir=cache_dir, cache=cache, jobs=jobs)


def _load_summaries(path, cache_dir, cache, jobs) -> List[tuple]:
    """[(file, Summary)] of every trace at ``path`` (a file, or a folder searched recursively), loaded
    by the CLI's own loading (pipeline.batch.load_summaries); LoadError for the first file that did not load."""
    from .v1.summary_pb2 import Summary

    try:
        loaded = batch.load_summaries(os.fspath(path), _options(cache_dir, cache, jobs))
    except batch.LoadFailure as exc:
        raise LoadError(str(exc)) from None
    errors = [error for _, data, error, _ in loaded if data is None]
    if errors:
        more = f" (and {len(errors) - 1} more file(s) that did not load)" if len(errors) > 1 else ""
        raise LoadError(errors[0] + more)
    return [(f, Summary.FromString(data)) for f, data, _, _ in loaded]


def _load_parallel(run_dir, span, cache_dir, cache, jobs):
    """(RunParallel, the files analysed, the files left out) of one span of the run in ``run_dir``, by
    the CLI's own loading (pipeline.batch.load_run: the same stored analysis as ``tb-paddle-profile parallel``)."""

    run_dir = os.fspath(run_dir)
    try:
        run = batch.load_run(run_dir, span, _options(cache_dir, cache, jobs))
    except batch.LoadFailure as exc:
        raise LoadError(str(exc)) from None
    left_out = [error for error, _ in run.errors]
    if run.result is None:
        raise LoadError(left_out[0] if left_out else f"{run_dir}: no rank could be loaded")
    run.result.run = run_dir
    return run.result, run.used, left_out


class _Frames:
    """Table frames by key, with attribute access for the common ones (``ALIASES``)."""

    ALIASES: Dict[str, tuple] = {}
    _frame_cache = None

    @property
    def display(self):  # pragma: no cover - defined by subclasses
        raise NotImplementedError

    def _frames(self) -> Dict[str, object]:
        if self._frame_cache is None:
            self._frame_cache = display_frames(self.display)
        return self._frame_cache

    @property
    def sentences(self):
        """The sentences of the views (verdict, findings, advice, notes, ...) as a frame: view, key,
        level, title, text."""
        return sentence_frame(self.display)

    @property
    def views(self) -> Dict[str, object]:
        """Every table as a DataFrame, by its key in the display model (docs/display.md lists them)."""
        return dict(self._frames())

    def table(self, key: str):
        """One display table by its key, as the CLI prints it and the tab shows it (every row, trees
        by ``depth``, a ``section`` column); KeyError naming the keys there are. The attributes
        (``operators``, ``ranks``, ...) are the same tables as data (:func:`tidy`)."""
        frames = self._frames()
        if key not in frames:
            raise KeyError(f"no table {key!r} here; tables: {', '.join(frames) or 'none'}")
        return frames[key]

    display_table = table

    def __getattr__(self, name: str):
        aliases = type(self).ALIASES
        if name.startswith("_") or name not in aliases:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        frames = self._frames()
        for key in aliases[name]:
            if key in frames:
                return tidy(frames[key], "inner" if name.endswith("_details") else "top")
        raise AttributeError(
            f"{type(self).__name__}.{name}: this {'trace' if isinstance(self, Profile) else 'run'} "
            f"has no table {aliases[name][0]!r}; tables: {', '.join(frames) or 'none'}"
        )

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(type(self).ALIASES))


class Profile(_Frames):
    """One trace: its Summary and Paddle's views as DataFrames.

    Attributes: ``summary`` (the Summary protobuf), ``path``, ``worker``, ``rank``; ``views`` (every
    table by key); ``device``, ``overview``, ``model``, ``model_steps``, ``distributed``, ``operators``,
    ``kernels``, ``kernels_by_operator``, ``memory_manipulation``, ``user_defined``, ``memory`` (the
    Memory Summary of every place, a ``place`` column first), ``memory_curve`` (raw: allocated and
    reserved bytes over time per place). Tables that sort (operators, kernels, user_defined) are in the
    order of ``sorted_by`` (Paddle's SortedKeys, default CPUTotal); ``with_options`` gives another.
    """

    ALIASES = {
        "device": ("device",),
        "overview": ("overview",),
        "model": ("model",),
        "model_steps": ("model_steps",),
        "distributed": ("distributed",),
        "operators": ("operators",),
        "operator_details": ("operators",),
        "operators_by_shape": ("operators_by_shape",),
        "kernels": ("kernels",),
        "kernel_details": ("kernels",),
        "kernels_by_operator": ("kernels_by_operator",),
        "memory_manipulation": ("memory_manipulation",),
        "user_defined": ("user_defined",),
        "user_defined_details": ("user_defined",),
    }

    def __init__(
        self, summary, path: str = "", sorted_by: str = "CPUTotal", op_detail: bool = True, thread_sep: bool = False
    ):
        self.summary = summary
        self.path = path
        self.sorted_by, self.op_detail, self.thread_sep = sorted_by, op_detail, thread_sep
        self._display = None
        self._frame_cache = None

    @property
    def worker(self) -> str:
        return self.summary.meta.worker

    @property
    def rank(self) -> int:
        return self.summary.meta.rank

    @property
    def display(self):
        """The display model of this trace (a ``Display`` protobuf) for this Profile's options."""
        if self._display is None:
            from tb_paddle_profile.present.display.summary import summary_display

            self._display = summary_display(
                self.summary, sorted_by=self.sorted_by, op_detail=self.op_detail, thread_sep=self.thread_sep
            )
        return self._display

    def with_options(self, sorted_by: str = "CPUTotal", op_detail: bool = True, thread_sep: bool = False) -> "Profile":
        """The same trace with other table options (nothing is loaded again)."""
        return Profile(self.summary, self.path, sorted_by, op_detail, thread_sep)

    @property
    def memory(self):
        """Paddle's Memory Summary of every place in one frame (``place`` first; Paddle prints one
        table per place that has allocated items, ``memory_tables`` has them apart)."""
        import pandas as pd

        parts = []
        for key, frame in self.memory_tables.items():
            part = frame.copy()
            part.insert(0, "place", key[len("memory.") :])
            parts.append(part)
        if not parts:
            return pd.DataFrame(
                columns=[
                    "place",
                    "name",
                    "type",
                    "allocation_count",
                    "free_count",
                    "allocation_size",
                    "free_size",
                    "increased_size",
                ]
            )
        out = pd.concat(parts, ignore_index=True)
        out.attrs.update(parts[0].attrs, key="memory", title="Memory Summary")
        return tidy(out)

    @property
    def memory_tables(self) -> Dict[str, object]:
        """The Memory Summary tables by key (``memory.<place>``), one per place."""
        return {k: v for k, v in self._frames().items() if k.startswith("memory.")}

    @property
    def memory_curve(self):
        """Raw: every place's allocated / reserved bytes at each memory event (time_ns relative to the
        trace start; ``decimated`` in attrs per place when the stored curve was thinned)."""
        import numpy as np
        import pandas as pd

        parts, decimated = [], {}
        for place in self.summary.memory.places:
            c = place.curve
            parts.append(
                pd.DataFrame(
                    {
                        "place": place.place,
                        "time_ns": np.asarray(c.time_ns, dtype=np.int64),
                        "allocated": np.asarray(c.allocated, dtype=np.int64),
                        "reserved": np.asarray(c.reserved, dtype=np.int64),
                    }
                )
            )
            decimated[place.place] = c.decimated
        out = (
            pd.concat(parts, ignore_index=True)
            if parts
            else pd.DataFrame({"place": [], "time_ns": [], "allocated": [], "reserved": []})
        )
        out.attrs.update(
            key="memory_curve",
            title="Memory over time",
            decimated=decimated,
            units={"time_ns": "ns", "allocated": "bytes", "reserved": "bytes"},
        )
        return out

    def text(
        self,
        sorted_by: Optional[str] = None,
        time_unit: str = "ms",
        op_detail: Optional[bool] = None,
        thread_sep: Optional[bool] = None,
        views: Optional[List[str]] = None,
    ) -> str:
        """Paddle's tables as ``tb-paddle-profile summary`` prints them (the same options; ``views``:
        Paddle's SummaryView names such as "OperatorView")."""
        from tb_paddle_profile.present.render import text

        return text.render(
            self.summary,
            sorted_by=sorted_by or self.sorted_by,
            time_unit=time_unit,
            op_detail=self.op_detail if op_detail is None else op_detail,
            thread_sep=self.thread_sep if thread_sep is None else thread_sep,
            views=views,
        )

    def to_json(self) -> str:
        """The Summary as proto3 JSON (``summary --format json``)."""
        from tb_paddle_profile.core.protojson import to_json

        return to_json(self.summary)

    def __repr__(self) -> str:
        m = self.summary.meta
        return f"<Profile {m.file_name or self.path!r} worker={m.worker!r} rank={m.rank}>"


class Run(_Frames):
    """The ranks of one run and span side by side: the hybrid-parallel analysis as DataFrames.

    Attributes: ``parallel`` (the RunParallel protobuf), ``path``, ``span``, ``notes``, ``left_out``
    (one line per file that could not be used); ``views`` (every table by key); ``ranks`` (per-rank
    step breakdown), ``steps`` (step time by rank and step), ``collectives`` (by kind),
    ``collectives_by_rank``, ``waits``, ``verdict`` (the named stragglers, the verdict sentence in
    ``attrs["text"]``), ``findings``, ``topology``, ``clocks``, ``pipeline``, ``layers`` (the time per
    layer by stage: median, slowest rank; ``parallel.layers.why_not`` when absent), ``outliers``,
    ``advice`` (one row per piece of advice), ``advice_triggers``, ``sentences`` (every sentence the
    CLI prints, as text); raw ``step_times`` and ``exposed_communication`` (steps × ranks, ns).
    The table keys are those of the display model (docs/display.md).
    """

    ALIASES = {
        "ranks": ("ranks",),
        "steps": ("step_time",),
        "exposed_by_step": ("exposed_comm_by_step",),
        "collectives": ("kinds",),
        "collectives_by_rank": ("rank_kinds",),
        "host": ("host",),
        "waits": ("waits",),
        "stragglers": ("stragglers",),
        "topology": ("topology",),
        "clocks": ("clocks",),
        "findings": ("findings",),
        "pipeline": ("pipeline", "pipeline_ranks"),
        "advice_triggers": ("advice_triggers",),
        "outliers": ("outliers",),
        "layers": ("stage_layers",),
    }

    def __init__(self, parallel, files=(), left_out=(), load_options=None):
        self.parallel = parallel
        self._load_options = dict(load_options or {})
        self.path = parallel.run
        self.span = parallel.span
        self.files = list(files)
        self.left_out = list(left_out)
        self._display = None
        self._frame_cache = None

    @property
    def notes(self) -> List[str]:
        return list(self.parallel.notes)

    @property
    def display(self):
        """The display model of the run (a ``Display`` protobuf: view "parallel")."""
        if self._display is None:
            if self.parallel.HasField("display"):
                self._display = self.parallel.display
            else:
                from tb_paddle_profile.present.display.parallel import parallel_display

                self._display = parallel_display(self.parallel)
        return self._display

    @property
    def ranks(self):
        """One row per rank: its step breakdown (ns, fractions) and its place in the topology as integers:
        ``dp``, ``pp`` (its pipeline stage as the label says it: 0 when not pipelined), ``mp``, ``stage``
        (the analysis' pipeline stage: -1 when not pipelined), ``sharding`` and ``device_id`` (its GPU;
        -1: unknown) and ``host``."""
        frame = tidy(self.table("ranks"))
        by_rank = {r.rank: r for r in self.parallel.ranks}
        coords = {
            "dp": "dp",
            "pp": "pipeline_stage",
            "mp": "mp",
            "stage": "pipeline_stage",
            "sharding": "sharding",
            "device_id": "device_id",
        }
        at = frame.columns.get_loc("label") + 1 if "label" in frame else 1
        for i, (col, field) in enumerate(coords.items()):
            values = [int(getattr(by_rank[r], field)) if r in by_rank else -1 for r in frame["rank"]]
            if col == "pp":
                values = [max(v, 0) for v in values]
            frame.insert(at + i, col, values)
            frame[col] = frame[col].astype("int64")
        frame.insert(at + len(coords), "host", [by_rank[r].hostname if r in by_rank else "" for r in frame["rank"]])
        return frame

    @property
    def verdict(self):
        """The straggler verdict: one row per named rank (cause, cost to the job, compute against its
        role peers; empty when no rank is named), the verdict's sentence in ``attrs["text"]``."""
        frame = tidy(self.table("stragglers"))
        sentences = self.sentences
        said = sentences.loc[sentences["key"] == "verdict", "text"]
        frame.attrs["text"] = said.iloc[0] if len(said) else ""
        return frame

    @property
    def advice(self):
        """The advice, most important first: key (its rule), level, title, text (the rank and the
        thresholds that fired it are in ``advice_triggers``)."""
        s = self.sentences
        keep = (s["section"] == "advice") & (s["part"] == "")
        return s[keep].reset_index(drop=True)

    def _matrix(self, matrix, key: str, title: str):
        import numpy as np
        import pandas as pd

        steps = list(self.parallel.steps)
        ranks = [r.rank for r in self.parallel.ranks]
        values = np.asarray(matrix.values_ns, dtype=np.int64)
        if values.size != len(steps) * len(ranks):
            values = np.zeros(len(steps) * len(ranks), dtype=np.int64)
        frame = pd.DataFrame(
            values.reshape(len(ranks), len(steps)).T,
            index=pd.Index(steps, name="step"),
            columns=pd.Index(ranks, name="rank"),
        )
        frame.attrs.update(key=key, title=title, units="ns", workers={r.rank: r.worker for r in self.parallel.ranks})
        return frame

    @property
    def step_times(self):
        """Raw: each step's time on each rank (rows: steps, columns: ranks; ns, 0 where a rank lacks the
        step), as the run's step-time heatmap draws it."""
        return self._matrix(self.parallel.step_time, "step_times", "Step time per rank")

    @property
    def exposed_communication(self):
        """Raw: each step's exposed communication on each rank (rows: steps, columns: ranks; ns)."""
        return self._matrix(
            self.parallel.exposed_communication, "exposed_communication", "Exposed communication per rank"
        )

    def profile(self, rank: int, **options) -> Profile:
        """The Profile of one rank of this run (by rank number), from the cache the run was loaded with."""
        by_name = {f.file_name: f for f in self.files}
        for r in self.parallel.ranks:
            if r.rank == rank and r.file_name in by_name:
                return load(by_name[r.file_name].path, **{**self._load_options, **options})
        raise KeyError(f"no rank {rank} in {self.path} (ranks: {', '.join(str(r.rank) for r in self.parallel.ranks)})")

    def text(self, time_unit: str = "ms") -> str:
        """What ``tb-paddle-profile parallel`` prints for this run and span."""
        from tb_paddle_profile.present.render import parallel_text

        return parallel_text.render(self.parallel, time_unit=time_unit)

    def to_json(self) -> str:
        from tb_paddle_profile.core.protojson import to_json

        return to_json(self.parallel)

    def __repr__(self) -> str:
        return f"<Run {self.path!r} span={self.span!r} ranks={len(self.parallel.ranks)}>"


# ------------------------------------------------------------------ entry points


def load(
    path,
    *,
    sorted_by: str = "CPUTotal",
    op_detail: bool = True,
    thread_sep: bool = False,
    cache_dir: Optional[str] = None,
    cache: bool = True,
    jobs: Optional[int] = None,
) -> Profile:
    """One trace (a ``*.paddle_trace.json[.gz]`` file, or a folder holding exactly one) as a Profile.

    It is read through the cache the CLI and the TensorBoard tab use (``$TB_PADDLE_PROFILE_CACHE`` or
    ``~/.cache/tb_paddle_profile``; ``cache_dir`` another folder; ``cache=False`` neither reads nor
    fills it). ``jobs``: cores that read one large trace together. LoadError when it cannot be read.
    """
    loaded = _load_summaries(path, cache_dir, cache, jobs)
    if len(loaded) > 1:
        raise LoadError(
            f"{os.fspath(path)}: {len(loaded)} traces here; tbp.load reads one "
            f"(tbp.load_all for each, tbp.load_run for the run across ranks)"
        )
    f, summary = loaded[0]
    return Profile(summary, f.path, sorted_by, op_detail, thread_sep)


def load_all(
    path,
    *,
    sorted_by: str = "CPUTotal",
    op_detail: bool = True,
    thread_sep: bool = False,
    cache_dir: Optional[str] = None,
    cache: bool = True,
    jobs: Optional[int] = None,
) -> List[Profile]:
    """Every trace under a folder (searched recursively, ordered by path) as Profiles, as
    ``tb-paddle-profile summary FOLDER`` reads them."""
    return [
        Profile(s, f.path, sorted_by, op_detail, thread_sep) for f, s in _load_summaries(path, cache_dir, cache, jobs)
    ]


def load_run(
    folder,
    span: Optional[str] = None,
    *,
    cache_dir: Optional[str] = None,
    cache: bool = True,
    jobs: Optional[int] = None,
) -> Run:
    """The ranks of the run in ``folder`` (one trace per rank, searched recursively) side by side, for
    one recorded span (Paddle's span_index; default the first), as ``tb-paddle-profile parallel``
    analyses them. A rank that cannot be read is left out (``Run.left_out``, and a note); LoadError
    when none can."""
    parallel, files, left_out = _load_parallel(folder, span, cache_dir, cache, jobs)
    return Run(parallel, files, left_out, dict(cache_dir=cache_dir, cache=cache, jobs=jobs))
