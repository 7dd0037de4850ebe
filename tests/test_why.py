"""The "why" of a comparison (issue 45): what bounds the winner, what overlaps, concurrency and
utilisation against serial's, the distance to the lower bound, and one line when the other mode
would change the verdict; every figure recomputed here from the schedules and traces."""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

import pandas as pd
import pytest

import workbench as wb
from workbench.orchestration import why as W
from workbench.orchestration.comparison import Comparison


@cache
def _inception(mode: str) -> Comparison:
    return wb.compare(wb.models.build("inception_v3"), device="h100", mode=mode,
                      show_progress=False, planner=None)


def test_graph_mode_names_the_critical_path_the_overlapping_blocks_and_the_eager_verdict() -> None:
    c = _inception("graph")
    lines = c.why
    assert len(lines) == 5, lines
    best = c.best
    row = c.table.set_index("policy").loc[best]
    bound, overlap, concurrency, lower, other = lines
    assert f"What bounds {best}: the critical path, {row['critical_path_us']:,.1f} µs" in bound
    assert f"{c.schedules[best].n_syncs} cross-stream syncs" in bound
    assert "Mixed_" in overlap and "4 streams" in overlap
    serial = c.table.set_index("policy").loc["serial"]
    assert (f"{row['avg_concurrency']:.2f} ops running on average" in concurrency
            and f"against serial's {serial['avg_concurrency']:.2f}" in concurrency)
    assert f"{row['ratio_to_lb']:.2f}× the lower bound" in lower
    # eager: the serial schedule's own launches, host time and kernel time
    eager = wb.simulate(c.schedules["serial"], "h100", mode="eager")
    launches = int(eager.df["kernels"].sum())
    assert other.startswith("In eager mode the verdict changes: serial wins")
    assert f"{launches:,} kernel launches" in other
    assert f"{eager.meta['host_end_us']:,.0f} µs for {eager.df['alone_us'].sum():,.0f} µs" in other


def test_eager_mode_says_the_host_bounds_serial_and_graph_mode_would_change_it() -> None:
    c = _inception("eager")
    assert c.best in c.best_policies and c.table.iloc[0]["speedup"] == pytest.approx(1.0)
    bound, *_, other = c.why
    assert bound.startswith("Nothing beats serial: the host's launches bound every schedule")
    graph = _inception("graph")
    assert other.startswith(f"In graph mode the verdict changes: {graph.best} wins "
                            f"({graph.table.iloc[0]['speedup']:.2f}× serial)")


def test_no_other_mode_line_when_the_verdict_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    c = _inception("graph")
    same = W.OtherMode("eager", {p: 1.0 for p in c.schedules}, c.best or "", 1.3, 1, 1.0, 1.0)
    monkeypatch.setattr(W, "other_mode", lambda comparison: same)
    assert W.other_mode_line(c) == ""
    ahead = W.OtherMode("eager", {**same.makespans, "nnc": 0.9}, "nnc", 1.11, 1, 1.0, 1.0)
    monkeypatch.setattr(W, "other_mode", lambda comparison: ahead)
    assert W.other_mode_line(c).startswith("In eager mode the verdict changes: nnc wins (1.11×")


def test_the_other_mode_is_not_simulated_for_large_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    g = wb.models.build("nnc_diamond")
    monkeypatch.setattr(W, "OTHER_MODE_MAX_OPS", len(g) - 1)
    c = wb.compare(g, device="h100", show_progress=False, planner=None)
    assert W.other_mode(c) is None and not any(line.startswith("In eager") for line in c.why)


def test_overlap_by_part_counts_shared_time_per_block() -> None:
    df = pd.DataFrame({"op": ["a/x", "a/y", "b/z", "c"], "kind": ["conv2d"] * 3 + ["relu"],
                       "stream": [0, 1, 0, 2], "start_us": [0.0, 2.0, 10.0, 11.0],
                       "end_us": [6.0, 8.0, 14.0, 12.0]})
    share, parts = W.overlap_by_part(SimpleNamespace(df=df, makespan=20.0))
    # two ops run at once in [2, 6) and [11, 12): 5 of 20 µs
    assert share == pytest.approx(0.25)
    assert parts == [("a", 8.0, 2), ("b", 1.0, 1), ("relu ops", 1.0, 1)]


def test_one_block_graphs_are_named_one_level_down() -> None:
    c = wb.compare(wb.models.build("transformer_block"), device="h100", show_progress=False,
                   planner=None)
    overlap = next(line for line in c.why if line.startswith("What overlaps"))
    assert "block0/" in overlap, overlap


def test_why_is_in_the_cli_summary(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    path = wb.save(wb.models.nnc_diamond(), tmp_path / "g.json")
    assert main(["compare", str(path), "--policies", "nnc", "--no-progress",
                 "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert "why: What bounds nnc: the critical path" in out
    assert "nnc_diamond: 4 ops on h100 (graph mode)" in out


def test_dropped_views_are_named_on_stdout(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    g = wb.models.build("transformer_block")
    assert main(["compare", "--model", "transformer_block", "--policies", "nnc",
                 "--no-progress", "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    c = wb.compare(g, ["nnc"], show_progress=False, planner=None)
    dropped = c.settings["no_task_dropped"]
    assert dropped > 0
    assert f"{len(c.graph)} ops (of {len(g)}: {dropped} no-task ops dropped)" in out
    assert f"note: {dropped} no-task ops dropped before scheduling" in out


def test_an_imported_profile_says_its_times_are_its_own(tmp_path) -> None:
    """`workbench import` of a CPU profile, then compare: the note says the times are measured
    ones kept as they are, on the CPU they were recorded on; the why claims no FLOP rate."""
    import subprocess
    import sys
    from pathlib import Path

    trace = Path(__file__).parent / "data" / "branchy_cpu.pt.trace.json"
    cli = [sys.executable, "-m", "workbench.cli"]
    subprocess.run([*cli, "import", str(trace), "-o", str(tmp_path / "g.json")], check=True,
                   capture_output=True)
    out = subprocess.run([*cli, "compare", str(tmp_path / "g.json"), "--policies", "nnc",
                          "--no-progress", "-o", str(tmp_path / "r.html")], check=True,
                         capture_output=True, text=True).stdout
    assert ("note: 17 of 17 ops carry their own times (duration_us: given by hand or measured "
            "in an imported profile; 17 of them ran on the host CPU where they were recorded): the "
            "simulator keeps those times as they are, and only the streams, syncs and launches "
            "around them are h100's") in out
    assert "peak FLOP rate" not in out


def test_graph_mode_barriers_are_stage_joins_and_eager_ones_make_the_host_wait() -> None:
    from workbench.orchestration.report_notes import barrier_note

    g = wb.models.build("nnc_diamond")
    graph = wb.compare(g, ["ios"], show_progress=False, planner=None)
    assert graph.schedules["ios"].barrier_kind == "device_sync"
    note = barrier_note(graph)
    assert "stage boundaries" in note and "the host does not wait" in note
    assert "never idles at them" in note and "host waits for an idle device" not in note
    # IOS's stages searched for graph mode, run eagerly (eager IOS keeps one stage here)
    eager = wb.compare(g, ["ios"], show_progress=False, planner=None, mode="eager",
                       options={"ios": {"mode": "graph"}})
    trace = eager.traces["ios"]
    assert eager.schedules["ios"].n_barriers and trace.barrier_idle_us() > 0.05
    note = barrier_note(eager)
    assert "host waits for an idle device" in note
    assert f"the device idles {trace.barrier_idle_us():,.1f} µs" in note


def test_listing_names_a_cpus_cores(capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    assert main(["devices"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "32 cores" in rows["cpu"] and "SMs" not in rows["cpu"] and "132 SMs" in rows["h100"]


def test_the_apps_table_shows_the_why() -> None:
    pytest.importorskip("ipywidgets")
    from workbench.ui import results
    from workbench.viz.style import escape

    c = _inception("graph")
    shown = results.table_html(c)
    assert 'class="wb-why"' in shown
    assert all(escape(line) in shown for line in c.why)
