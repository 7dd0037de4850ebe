"""Issue 34, finding 9: memory planning of a wide op is near-linear in its outputs.

One op with 100,000 zero-byte outputs read by one concat made ``plan_memory`` ask for 37.3 GiB:
the outputs are live together, so the interval relation listed all n²/2 pairs.  Outputs of one op
(tensors born at one step) are now *siblings*, a rule of the conflict graph, never listed pairs.

Every check counts structure (listed pairs) or memory (tracemalloc peaks and their growth), never
wall time, so a loaded machine cannot fail it; each starts with a small structural check, so the
quadratic code fails there before it is asked for gigabytes.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from workbench.errors import FormatError, OptionError
from workbench.io.traces import pytorch_profile, trace_events
from workbench.io.traces.pytorch_profile import load_pytorch_trace
from workbench.io.traces.trace_events import read_trace_json
from workbench.memory import check_no_overlap, lifetimes, plan_memory, plan_usage
from workbench.memory.conflicts import ConflictSet, interval_graph, pairs_graph
from workbench.memory.plan import interval_pairs, parse_records, prepare
from workbench.memory.planners import PLANNERS, planners
from workbench.values.graph import Graph, Op, Tensor
from workbench.values.schedule import build_schedule

FAST = [p for p in planners() if not PLANNERS.get(p).slow]
MIB = 1 << 20


def wide(n: int, size: int = 0) -> list[tuple[int, int, int, str]]:
    """A 1 MiB input (step 0..1), ``n`` outputs of ``size`` bytes made at step 1 and read at
    step 2, and the 1 MiB result (step 2..3): the records of ``a -> wide -> concat -> d``."""
    return ([(MIB, 0, 1, "a")] + [(size, 1, 2, f"w{k}") for k in range(n)]
            + [(MIB, 2, 3, "c")])


def listed_pairs(records: list[Any]) -> int:
    """Pairs the interval relation of ``records`` lists explicitly (CSR entries / 2)."""
    return len(prepare(records).graph.idx) // 2


def peak_bytes(fn: Callable[[], Any]) -> tuple[Any, int]:
    """``fn()`` and the peak of memory it allocated (tracemalloc sees NumPy's buffers too)."""
    tracemalloc.start()
    try:
        return fn(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_outputs_of_one_op_list_no_pair_but_still_conflict() -> None:
    recs = wide(2_000, size=512)
    assert listed_pairs(recs) <= 2 * len(recs)  # quadratic: ~2,000,000
    graph = interval_graph([r[1] for r in recs], [r[2] for r in recs])
    assert graph.conflict(1, 2) and graph.conflict(5, 1999) and not graph.conflict(0, 2001)
    # the relation itself is unchanged: degrees count the siblings
    degrees = graph.degrees.tolist()
    assert degrees[1] == 2_000 + 1 and degrees[0] == 2_000 and degrees[-1] == 2_000


@pytest.mark.parametrize("planner", FAST)
def test_twelve_thousand_zero_byte_outputs_plan_in_linear_memory(planner: str) -> None:
    assert listed_pairs(wide(2_000)) <= 4_000  # guard: the quadratic code stops here
    _, small = peak_bytes(lambda: plan_usage(wide(3_000), planner))
    plan, large = peak_bytes(lambda: plan_usage(wide(12_000), planner))
    # 4x the outputs: a linear planner ~4x the memory, a quadratic one 16x (here ~0.7 GB)
    assert large < 8 * small, (small, large)
    assert large < 24 * MIB, large
    check_no_overlap(plan)
    assert plan.arena_bytes == plan.lower_bound == MIB or planner == "naive"


def test_exact_refuses_a_wide_op_before_building_its_conflicts() -> None:
    recs = wide(3_000)
    with pytest.raises(OptionError, match="at most 40 tensors, got 3002"):
        plan_usage(recs, "exact")
    _, peak = peak_bytes(lambda: pytest.raises(OptionError, plan_usage, recs, "exact"))
    assert peak < 8 * MIB, peak  # the quadratic relation of 3,000 siblings: ~100 MB


@pytest.mark.parametrize("planner", FAST)
def test_non_empty_siblings_are_placed_apart(planner: str) -> None:
    """1,000 outputs of 512 bytes, all live together: every plan lays them side by side."""
    plan = plan_usage(wide(1_000, size=512), planner, alignment=512)
    check_no_overlap(plan)
    outs = sorted(plan.offsets[1:-1])
    assert all(b - a >= 512 for a, b in zip(outs, outs[1:], strict=False))
    if planner != "naive":
        assert plan.arena_bytes == plan.lower_bound == MIB + 1_000 * 512


def wide_graph(n: int, size: int) -> Graph:
    """``a -> wide`` (``n`` outputs); ``left`` and ``right`` read half of them each, ``d`` both."""
    half = n // 2
    outs = tuple(f"w{k}" for k in range(n))
    ops = [Op("a", "relu", outputs=("a:out",), bytes_written=MIB),
           Op("wide", "split", inputs=("a:out",), outputs=outs, bytes_read=MIB),
           Op("left", "concat", inputs=outs[:half], outputs=("l:out",), bytes_written=MIB),
           Op("right", "concat", inputs=outs[half:], outputs=("r:out",), bytes_written=MIB),
           Op("d", "add", inputs=("l:out", "r:out"), outputs=("d:out",), bytes_written=MIB)]
    tensors = [Tensor("a:out", MIB, "a"), Tensor("l:out", MIB, "left"),
               Tensor("r:out", MIB, "right"), Tensor("d:out", MIB, "d")]
    tensors += [Tensor(t, size, "wide") for t in outs]
    return Graph(ops, tensors, name="wide")


def two_streams(graph: Graph) -> Any:
    order = ("a", "wide", "left", "right", "d")
    stream_of = {"a": 0, "wide": 0, "left": 0, "right": 1, "d": 0}
    return build_schedule(graph, "hand", stream_of, issue_order=order)


@pytest.mark.parametrize("size", [0, 512])
def test_a_wide_op_on_two_streams_lists_no_sibling_pair(size: int) -> None:
    schedule = two_streams(wide_graph(2_000, size))
    assert schedule.n_streams == 2
    lt = lifetimes(schedule)
    conflicts = lt.conflicts
    assert isinstance(conflicts, ConflictSet)
    assert len(conflicts.graph.idx) <= 8 * len(lt.records)  # quadratic: ~2,000,000 pairs
    index = {r.name: i for i, r in enumerate(lt.records)}
    assert (index["w0"], index["w1999"]) in conflicts  # siblings conflict
    plan = plan_memory(schedule)
    check_no_overlap(plan)
    if size == 0:  # non-empty siblings are placed in O(k) each (O(k²) time, linear memory)
        big = two_streams(wide_graph(8_000, size))
        _, peak = peak_bytes(lambda: plan_memory(big))
        assert peak < 24 * MIB, peak


def test_pairs_graph_has_no_siblings() -> None:
    """An explicit relation gives every tensor its own birth: exactly the listed pairs."""
    graph = pairs_graph(4, {(0, 1), (2, 3)})
    assert sorted(ConflictSet(graph)) == [(0, 1), (2, 3)]
    assert graph.degrees.tolist() == [1, 1, 1, 1]


def test_siblings_tails_and_listed_pairs_together_match_the_interval_sweep() -> None:
    """Many records per first step, some reaching the last step (tails): the relation and the
    degrees equal the pairwise overlap."""
    items = [(8 * (k % 3), k // 4, k // 4 + k % 5, f"t{k}") for k in range(60)]
    recs = parse_records(items)
    graph = interval_graph([r.first for r in recs], [r.last for r in recs])
    pairs = interval_pairs(recs)
    assert sorted(ConflictSet(graph)) == pairs
    degree = [0] * len(recs)
    for i, j in pairs:
        degree[i] += 1
        degree[j] += 1
    assert graph.degrees.tolist() == degree


# ------------------------------------------------------------------ big files (finding 10)


def tiny_trace(tmp_path: Any, events: int = 40) -> Any:
    kernel = {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7,
              "dur": 1.0, "args": {"stream": 7}}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"traceEvents": [dict(kernel, ts=2.0 * k)
                                                for k in range(events)]}))
    return path


def test_reading_a_small_trace_takes_little_memory(tmp_path: Any) -> None:
    """``f.read(limit + 1)`` allocated the whole 1 GiB input limit for any file: a reader under
    a 2 GiB address-space cap ran out on a 240 MB trace."""
    path = tiny_trace(tmp_path)
    data, peak = peak_bytes(lambda: read_trace_json(path))
    assert peak < 4 * MIB, peak
    names = [e["name"] for e in data["traceEvents"]]
    assert all(n is names[0] for n in names)  # one shared copy of a repeated string


def test_running_out_of_memory_in_a_trace_reader_is_one_line(tmp_path: Any,
                                                             monkeypatch: Any) -> None:
    path = tiny_trace(tmp_path)

    def no_memory(*args: Any, **kwargs: Any) -> None:
        raise MemoryError

    monkeypatch.setattr(trace_events, "parse_json", no_memory)
    with pytest.raises(FormatError, match=r"tiny.json: out of memory while reading it \("
                                          r"(no address-space cap set|address-space cap .*GiB)"
                       ) as err:
        load_pytorch_trace(path)
    assert "\n" not in str(err.value)
    monkeypatch.undo()
    monkeypatch.setattr(pytorch_profile, "_select", no_memory)  # after the parse, too
    with pytest.raises(FormatError, match="out of memory while reading it"):
        load_pytorch_trace(path)
