"""sweep(): tidy table, local and Dask engines agree, figures build."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

import workbench as wb
from workbench.orchestration.sweep import COLUMNS, TIMING_COLUMNS, sweep

POLICIES = ["serial", "nnc", "asap", "wavefront", "min_streams"]
DEVICES = ("h100", "v100")


def _policies() -> list:
    # min_streams by name once the registry has it; until then, the function itself
    if "min_streams" in wb.policies():
        return POLICIES
    from workbench.schedulers.min_streams import schedule_min_streams

    return [*POLICIES[:-1], schedule_min_streams]


def _graphs() -> dict:
    return {
        "squeezenet": "squeezenet",                                   # model name, batch-aware
        "layered": lambda batch: wb.models.layered_dag(5, 3, seed=batch),  # callable batch -> Graph
        "diamond": wb.models.nnc_diamond(),                           # fixed graph: run once
    }


@pytest.fixture(scope="module")
def local_table() -> pd.DataFrame:
    return sweep(_graphs(), _policies(), DEVICES, (1, 2), show_progress=False)


def test_local_sweep_is_a_tidy_table(local_table: pd.DataFrame) -> None:
    df = local_table
    assert list(df.columns) == list(COLUMNS)
    # 2 batch-aware graphs × 2 batches × 2 devices + 1 fixed graph × 2 devices, × 5 policies
    assert len(df) == (2 * 2 * 2 + 2) * len(POLICIES)
    assert not df.duplicated(["graph", "batch", "device", "policy"]).any()
    assert list(dict.fromkeys(df["policy"])) == POLICIES
    assert list(dict.fromkeys(df["graph"])) == ["squeezenet", "layered", "diamond"]
    assert df.loc[df["graph"] == "diamond", "batch"].isna().all()
    assert set(df.loc[df["graph"] == "squeezenet", "batch"]) == {1, 2}
    serial = df[df["policy"] == "serial"]
    assert (serial["speedup"] == 1.0).all() and (serial["streams"] == 1).all()
    assert (df["ratio_to_lb"] >= 1 - 1e-9).all()
    assert (df["makespan_us"] > 0).all() and (df["arena_mib"] >= df["peak_live_mib"] - 1e-9).all()
    assert (df[list(TIMING_COLUMNS)] >= 0).all().all()
    # the same numbers as compare() for one cell
    cmp = wb.compare(wb.models.build("squeezenet", batch=2), ["nnc"], device="v100",
                     planner=None, show_progress=False).table.set_index("policy")
    row = df[(df["graph"] == "squeezenet") & (df["batch"] == 2) & (df["device"] == "v100")
             & (df["policy"] == "nnc")].iloc[0]
    assert row["makespan_us"] == pytest.approx(float(cmp.loc["nnc", "makespan_us"]))
    assert row["speedup"] == pytest.approx(float(cmp.loc["nnc", "speedup"]))


def test_dask_sweep_gives_the_same_table(local_table: pd.DataFrame) -> None:
    pytest.importorskip("dask.distributed")
    remote = sweep(_graphs(), _policies(), DEVICES, (1, 2), engine="dask", show_progress=False)
    drop = list(TIMING_COLUMNS)
    pd.testing.assert_frame_equal(local_table.drop(columns=drop), remote.drop(columns=drop))


def test_dask_sweep_uses_a_given_client() -> None:
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        df = sweep({"diamond": wb.models.nnc_diamond()}, ["nnc"], engine="dask", client=client,
                   show_progress=False)
        assert client.status == "running"  # ours: not closed by sweep()
    assert list(df["policy"]) == ["serial", "nnc"]


def test_dask_missing_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails
    with pytest.raises(wb.OptionError, match=r"pip install 'schedule-workbench\[dask\]'"):
        sweep({"diamond": wb.models.nnc_diamond()}, ["nnc"], engine="dask", show_progress=False)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"engine": "spark"}, wb.OptionError, "unknown engine 'spark'"),
    ({"devices": ("tpu",)}, wb.OptionError, "unknown device 'tpu'"),
    ({"batch_sizes": (0,)}, wb.OptionError, "batch sizes"),
    ({"mode": "lazy"}, wb.OptionError, "unknown simulation mode"),
    ({"policies": ["nnx"]}, wb.ScheduleError, "unknown scheduling policy 'nnx'"),
    ({"options": {"asap": {}}}, wb.OptionError, "not among the policies"),
    ({"client": object()}, wb.OptionError, "only used with engine='dask'"),
])
def test_bad_arguments(kwargs: dict, error: type, match: str) -> None:
    args = {"policies": ["nnc"], "show_progress": False, **kwargs}
    with pytest.raises(error, match=match):
        sweep({"diamond": wb.models.nnc_diamond()}, **args)


def test_options_reach_the_policy() -> None:
    df = sweep({"sq": "squeezenet"}, ["nnc"], options={"nnc": {"max_streams": 1}},
               show_progress=False)
    assert int(df.loc[df["policy"] == "nnc", "streams"].iloc[0]) == 1


def test_figures_build(local_table: pd.DataFrame) -> None:
    import plotly.graph_objects as go

    from workbench.viz.sweeps import quality_vs_search_time, speedup_frame, speedup_vs_batch

    frame = speedup_frame(local_table)
    assert frame["batch"].notna().all() and len(frame) == 2 * 2 * 2 * len(POLICIES)
    fig = speedup_vs_batch(local_table)
    assert isinstance(fig, go.Figure)
    # one line per (device, graph with a batch axis, policy); legend shows each policy once
    assert len(fig.data) == 2 * 2 * len(POLICIES)
    assert sum(bool(t.showlegend) for t in fig.data) == len(POLICIES)
    q = quality_vs_search_time(local_table)
    assert [t.name for t in q.data] == POLICIES
    assert q.layout.xaxis.type == "log"
    assert min(min(t.x) for t in q.data) > 0


def test_figures_escape_names() -> None:
    from workbench.viz.sweeps import quality_vs_search_time, speedup_vs_batch

    df = pd.DataFrame({"graph": ["<g>"] * 2, "batch": [1, 2], "device": ["h100"] * 2,
                       "policy": ["<b>x</b>"] * 2, "speedup": [1.0, 1.5],
                       "schedule_ms": [0.0, 1.0], "ratio_to_lb": [1.2, 1.1]})
    for fig in (speedup_vs_batch(df), quality_vs_search_time(df)):
        assert all("<b>x</b>" not in (t.name or "") for t in fig.data)
