"""What the tests share that is not a fixture: the repository's paths and trace sets (paths), whether a
test's body ran (report), TensorBoard and plugin helpers (plugin_testlib), Chromium through Playwright
(browser_util), Paddle's printed tables compared (parity), generated runs (scale_run, comm_json).
Importable as ``support.<module>``: pytest.ini puts tests/ on the import path."""
