"""The TensorBoard plugin class (TensorBoard's entry point ``tensorboard_plugins``): wiring only."""

from __future__ import annotations

import os
from typing import Any, Optional

from tb_paddle_profile.core import settings
from tb_paddle_profile.store.cache_store import open_cache
from tb_paddle_profile.pipeline.discovery import Discovery
from tb_paddle_profile.pipeline.loader import Loader
from tb_paddle_profile.plugin.routes import PLUGIN_NAME, Routes
from tb_paddle_profile.core import terminal

try:
    from tensorboard.plugins import base_plugin
except ImportError:  # the CLI (preprocess) works without TensorBoard
    base_plugin = None

logger = terminal.logger(__name__)

TAB_NAME = "Paddle Profile"
ENV_RESCAN_S = settings.RESCAN_S
MIN_RESCAN_S = 10.0
IS_ACTIVE_WAIT_S = 2.0  # is_active() waits this long, at most, for the first background scan


def rescan_interval(flags) -> Optional[float]:
    """Seconds between scans, or None to scan once."""
    env = os.environ.get(ENV_RESCAN_S, "").strip()
    if env:
        try:
            value = float(env)
            return value if value > 0 else None
        except ValueError:
            pass
    reload = getattr(flags, "reload_interval", None)
    if reload is not None and reload <= 0:
        return None
    return max(float(reload or 0), MIN_RESCAN_S)


# TensorBoard's plugin base class (object without TensorBoard: the CLI imports this module too)
_TBPlugin: Any = base_plugin.TBPlugin if base_plugin is not None else object


class PaddleProfilePlugin(_TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context):
        flags = getattr(context, "flags", None)
        logdir = getattr(context, "logdir", None) or ""
        # --logdir_spec (name:folder,...): TensorBoard gives plugins no logdir then, only its flags.
        spec = "" if logdir else (getattr(flags, "logdir_spec", None) or "")
        self.discovery: Optional[Discovery] = None
        self.loader: Optional[Loader] = None
        error = ""
        if logdir or spec:
            try:
                interval = rescan_interval(flags)
                self.discovery = Discovery(logdir, interval=interval) if logdir else Discovery.from_spec(spec, interval)
                error = "; ".join(self.discovery.problems)
            except Exception as err:  # e.g. hdfs:// without its driver: the tab stays off, TensorBoard runs
                error = f"cannot open {logdir or spec}: {' '.join(str(err).split()) or type(err).__name__}"
                logger.error("tb_paddle_profile: %s", error)
        if self.discovery is not None:
            self.loader = Loader(self.discovery.fs, open_cache())
            self.discovery.subscribe(self.loader.update)
            self.discovery.start()
        self._routes = Routes(self.discovery, self.loader, error=error)

    def get_plugin_apps(self):
        return self._routes.apps()

    def is_active(self) -> bool:
        """True once the last background scan found a trace; never lists or parses on this thread."""
        if self.discovery is None:
            return False
        self.discovery.wait_first_scan(IS_ACTIVE_WAIT_S)
        return bool(self.discovery.snapshot().runs)

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=TAB_NAME)

    def close(self) -> None:
        """Stop the scanning thread and the worker processes (TensorBoard itself never calls this)."""
        if self.discovery is not None:
            self.discovery.stop()
        if self.loader is not None:
            self.loader.close()
        self._routes.close()
