"""Runs whose DP x PP x MP grid is not inferred, made from ones whose grid is (for the views' fallbacks)."""


def take_the_grid_away(monkeypatch) -> None:
    """The cross-rank topology keeps its pipelines (send/recv chains) but loses its DP x PP x MP grid, as on
    runs whose grid is not inferred."""
    from tb_paddle_profile.analysis.crossrank import topology

    real = topology.build

    def without_grid(*a, **kw):
        topo, axes, g_axis = real(*a, **kw)
        assert topo.pipelines
        n = len(topo.coord_pp)
        topo.coord_dp, topo.coord_pp, topo.coord_mp = [-1] * n, [-1] * n, [-1] * n
        topo.dp = topo.pp = topo.mp = 0
        topo.complete = False
        return topo, axes, g_axis

    monkeypatch.setattr(topology, "build", without_grid)
