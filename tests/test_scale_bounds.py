"""Issue 43 #9: the scale inputs (``benchmarks/scale_inputs.py``) finish near-linearly or are
refused in one line at a stated limit (``docs/scale-bounds.md``).

Each test is built from the reproducer's own generator at a scaled-down size.  Complexities are
fitted exponents over three sizes timed interleaved (``tests/_complexity.py``: a loaded machine
slows every size alike, a quadratic step fits ~2) or counted work; no wall-clock limit.  The
limits are lowered through their environment variables so that a refusal is cheap to reach.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests._benchmarks import load_benchmark
from tests._complexity import assert_near_linear
from workbench.io.traces import kineto_links

INPUTS = load_benchmark("scale_inputs")


def _events(tmp_path: Path, kind: str, n: int) -> list[Any]:
    """The ``traceEvents`` of the scale input ``kind`` written at size ``n``."""
    path = INPUTS.write(kind, tmp_path, n)
    return list(json.loads(path.read_text())["traceEvents"])


# ====================================================================================== Kineto
def test_choosing_a_step_among_many_is_near_linear(tmp_path: Path) -> None:
    """``kineto_steps`` (111,111 ProfilerSteps of 4 kernels): every launch was tested against
    every step, O(launches x steps): 15 CPU s at 10^5 events, ~25 minutes at 10^6."""
    traces = {}
    for n in (16_000, 32_000, 64_000):
        raw = _events(tmp_path, "kineto_steps", n)
        steps = kineto_links.profiler_steps(raw)
        launched = {e["args"]["correlation"] for e in raw if e.get("cat") == "kernel"}
        traces[n] = (raw, steps, launched)

    def choose(n: int) -> object:
        raw, steps, launched = traces[n]
        for s in steps:
            s.launches = s.missing = 0
        return kineto_links.choose_step(steps, raw, launched, None, "t")

    assert_near_linear(choose, 16_000, "choose_step over many ProfilerSteps")
    raw, steps, launched = traces[16_000]
    chosen = choose(16_000)
    assert chosen is steps[-1] and chosen.launches == 4 and chosen.complete
    assert [s.launches for s in steps] == [4] * len(steps)


def test_step_counts_match_testing_every_step(tmp_path: Path) -> None:
    """The bisection counts what the loop over every step counted, overlapping steps, launches
    on a step's edge and launches without their kernel included."""
    rng = random.Random(43)
    for _ in range(30):
        raw: list[dict[str, Any]] = []
        for number in range(rng.randint(1, 6)):
            start = rng.choice([0.0, 10.0 * number, rng.uniform(0, 100)])
            raw.append({"ph": "X", "name": f"ProfilerStep#{number}", "ts": start,
                        "dur": rng.choice([0.0, 10.0, rng.uniform(0, 60)])})
        for c in range(rng.randint(0, 40)):
            raw.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                        "ts": rng.choice([10.0 * rng.randint(0, 10), rng.uniform(0, 120)]),
                        "args": {"correlation": c}})
        launched = {c for c in range(40) if rng.random() < 0.7}
        steps = kineto_links.profiler_steps(raw)
        kineto_links.choose_step(steps, raw, launched, "all", "t")  # "all" counts nothing
        kineto_links.choose_step(steps, raw, launched, None, "t")
        for step in steps:
            inside = [e for e in raw if e.get("cat") and step.start <= e["ts"] <= step.end]
            assert step.launches == len(inside)
            assert step.missing == sum(e["args"]["correlation"] not in launched
                                       for e in inside)


def _old_inferred(kernels: Sequence[Mapping[str, Any]],
                  runtime: Mapping[int, Mapping[str, Any]]) -> list[tuple[int, int] | None]:
    """The wait inference as it was (every pending wait visited by every kernel): the oracle."""
    by_thread: dict[Any, list[tuple[int, str, int | None]]] = defaultdict(list)
    for j, k in enumerate(kernels):
        call = runtime.get(k["corr"]) if k["corr"] is not None else None
        if call is not None:
            by_thread[(call.get("pid"), call.get("tid"))].append((k["corr"], "k", j))
    for corr, call in runtime.items():
        name = str(call.get("name", ""))
        what = "r" if kineto_links._RECORD.match(name) else \
            "w" if kineto_links._WAIT.match(name) else None
        if what:
            by_thread[(call.get("pid"), call.get("tid"))].append((corr, what, None))
    pairs: list[tuple[int, int] | None] = []
    for items in by_thread.values():
        items.sort(key=lambda t: t[0])
        last_kernel, recorded = None, None
        waiting: list[int | None] = []
        linked: set[tuple[int, Any]] = set()
        for _, what, index in items:
            if what == "k":
                assert index is not None
                stream = kernels[index]["stream"]
                keep: list[int | None] = []
                taken: set[int] = set()
                for src in waiting:
                    if src is None:
                        pairs.append(kineto_links._NO_SOURCE)
                    elif kernels[src]["stream"] == stream or (src, stream) in linked \
                            or src in taken:
                        keep.append(src)
                    else:
                        pairs.append((src, index))
                        linked.add((src, stream))
                        taken.add(src)
                waiting = keep
                last_kernel = index
            elif what == "r":
                recorded = last_kernel
            else:
                waiting.append(recorded)
        pairs.extend(kineto_links._NO_SOURCE if src is None else None for src in waiting)
    return pairs


def _random_calls(rng: random.Random, n: int) -> tuple[list[dict[str, Any]],
                                                        dict[int, dict[str, Any]]]:
    kernels: list[dict[str, Any]] = []
    runtime: dict[int, dict[str, Any]] = {}
    for corr in range(1, n + 1):
        tid = rng.choice([1, 1, 1, 2])
        what = rng.choice(["cudaLaunchKernel"] * 3 + ["cudaEventRecord"]
                          + ["cudaStreamWaitEvent"] * rng.choice([1, 4]))
        runtime[corr] = {"name": what, "pid": 1, "tid": tid}
        if what == "cudaLaunchKernel":
            kernels.append({"stream": rng.choice([7, 7, 8, 9]), "corr": corr})
    return kernels, runtime


def test_inferred_waits_are_what_visiting_every_wait_gave() -> None:
    """Run-length pending waits give the pairs the old loop gave, in the same order."""
    rng = random.Random(9)
    for _ in range(300):
        kernels, runtime = _random_calls(rng, rng.randint(1, 60))
        pairs, capped = kineto_links._inferred(kernels, runtime)
        assert not capped and pairs == _old_inferred(kernels, runtime)


class _Counted(dict):  # type: ignore[type-arg]
    """A kernel record that counts how often its fields are read."""

    reads = 0

    def __getitem__(self, key: Any) -> Any:
        _Counted.reads += 1
        return super().__getitem__(key)


def test_waits_pending_at_every_kernel_cost_one_step_a_kernel(tmp_path: Path) -> None:
    """``kineto_waits``: 500,000 waits on one record, then 250,000 kernels on the recording
    stream: every kernel visited every pending wait (reading the wait's kernel record each
    time), O(kernels x waits): 54 CPU s at 10^5 events, ~90 minutes at 10^6.  One run of waits
    on one record is one step now: the kernel records are read a bounded number of times per
    call (counted, 4,000 events: 2,000,000 reads before)."""
    raw = _events(tmp_path, "kineto_waits", 4_000)
    runtime = kineto_links.runtime_calls(raw)
    kernels = [_Counted(stream=e["args"]["stream"], corr=e["args"]["correlation"])
               for e in raw if e.get("cat") == "kernel"]
    _Counted.reads = 0
    result = kineto_links._inferred(kernels, runtime)
    assert _Counted.reads <= 4 * (len(kernels) + len(runtime)), _Counted.reads
    assert result == ([None] * 2_000, False)  # what the old loop said: all unresolved


def test_interleaved_pending_waits_stop_at_the_work_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Waits on two alternating records that no kernel takes do not form runs: the matching
    stops at its work limit (counted, linear) and the waits left count as unresolved."""
    def hostile(n: int) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
        kernels = [{"stream": 7, "corr": 1}, {"stream": 7, "corr": 3}]
        runtime: dict[int, dict[str, Any]] = {
            1: {"name": "cudaLaunchKernel", "tid": 1}, 2: {"name": "cudaEventRecord", "tid": 1},
            3: {"name": "cudaLaunchKernel", "tid": 1}, 4: {"name": "cudaEventRecord", "tid": 1}}
        corr = 5
        for w in range(n):  # alternate: a record after kernel 1 or after kernel 3, then a wait
            runtime[corr] = {"name": "cudaEventRecord", "tid": 1}
            runtime[corr + 1] = {"name": "cudaStreamWaitEvent", "tid": 1}
            kernels.append({"stream": 7, "corr": corr + 2})
            runtime[corr + 2] = {"name": "cudaLaunchKernel", "tid": 1}
            corr += 3 + w % 2
        return kernels, runtime

    visited = {"runs": 0}
    real_push = kineto_links._push

    def counting(runs: list[list[Any]], src: int | None, count: int) -> None:
        visited["runs"] += 1
        real_push(runs, src, count)

    monkeypatch.setattr(kineto_links, "_WAIT_WORK_BASE", 1_000)
    monkeypatch.setattr(kineto_links, "_push", counting)
    for n in (2_000, 8_000):
        visited["runs"] = 0
        kernels, runtime = hostile(n)
        pairs, capped = kineto_links._inferred(kernels, runtime)
        assert capped and len(pairs) == n
        assert visited["runs"] <= 10 * (3 * n + 4) + 1_000, visited


# ====================================================================================== limits
GRAPH_FILES = ["ops_full", "ops_edges", "chain", "outputs", "fan_in", "fan_out", "control",
               "dot_line", "fan_out_dot", "fan_in_dot"]


@pytest.mark.parametrize("kind", GRAPH_FILES)
def test_graphs_over_the_op_limit_are_refused_in_one_line(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """10^6 ops took a minute and 3.4 GB, and nothing bounded them: a 1 GiB edge list names
    4 * 10^7 ops (~60 GB, an OOM kill).  Over ``WORKBENCH_MAX_OPS`` (default 2,000,000) a file
    is refused in one line before any op is built; at the limit it loads."""
    import workbench as wb
    from workbench.io.text import dot, json_format

    path = INPUTS.write(kind, tmp_path, 300)
    ops = len(wb.load(path))
    built = {"ops": 0}

    def counted(*args: Any, **kwargs: Any) -> Any:
        built["ops"] += 1
        return Op(*args, **kwargs)

    from workbench.values.graph import Op

    monkeypatch.setattr(json_format, "Op", counted)
    monkeypatch.setattr(dot, "Op", counted)
    monkeypatch.setenv("WORKBENCH_MAX_OPS", str(ops))
    assert len(wb.load(path)) == ops
    built["ops"] = 0
    monkeypatch.setenv("WORKBENCH_MAX_OPS", str(ops - 1))
    with pytest.raises(wb.FormatError, match=rf"over the limit of {ops - 1:,} ops per graph "
                                             r"\(raise it with WORKBENCH_MAX_OPS") as info:
        wb.load(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)
    assert built["ops"] == 0
    monkeypatch.setenv("WORKBENCH_MAX_OPS", "many")
    with pytest.raises(wb.FormatError, match="WORKBENCH_MAX_OPS must be a positive integer"):
        wb.load(path)


@pytest.mark.parametrize("kind", ["kineto", "kineto_steps"])
def test_profiles_over_the_op_limit_are_refused_in_one_line(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.errors import FormatError
    from workbench.io import load_pytorch_trace

    path = INPUTS.write(kind, tmp_path, 900)
    ops = len(load_pytorch_trace(path).graph)
    monkeypatch.setenv("WORKBENCH_MAX_OPS", str(ops - 1))
    with pytest.raises(FormatError, match=rf"the trace.* has {ops:,} ops, over the limit of "
                                          rf"{ops - 1:,} ops per graph"):
        load_pytorch_trace(path)


def test_a_near_miss_among_a_million_names_is_not_searched() -> None:
    """An edge naming an undeclared op among 10^6 declared ones: difflib compared it with
    every name (7 s for the message)."""
    from workbench._checks import did_you_mean

    names = [f"op{k}" for k in range(20_001)]
    assert did_you_mean("op1x", names[:100]) == "; did you mean 'op1'?"
    assert did_you_mean("OP7", names) == "; did you mean 'op7'?"  # the exact fold still found
    assert did_you_mean("op1x", names) == ""


def test_an_ops_list_with_a_repeat_is_named_in_one_pass() -> None:
    """The repeated id of an edge-list ``ops`` list was found by scanning every prefix
    (quadratic: 10^5 ids took minutes); counted here by the membership tests it makes."""
    from workbench.errors import FormatError
    from workbench.io.text.json_format import graph_from_dict

    class Ids(list):  # type: ignore[type-arg]
        scans = 0

        def __getitem__(self, key: Any) -> Any:
            Ids.scans += 1
            return super().__getitem__(key)

    ids = Ids(f"op{k}" for k in range(5_000))
    ids.append("op4999")
    with pytest.raises(FormatError, match="'ops' lists op 'op4999' twice"):
        graph_from_dict({"edges": [["op0", "op1"]], "ops": ids})
    assert Ids.scans < 100


# ====================================================================================== bars
@pytest.mark.parametrize(("kind", "phases"), [
    ("ops_full", ["reading ops_full.json", "parsing", "building tensors and ops",
                  "checking the graph"]),
    ("dot_line", ["reading one_line.dot", "parsing", "building the graph"]),
    ("kineto", ["reading kineto.json", "parsing", "choosing the ops", "linking the kernels"]),
])
def test_big_inputs_show_a_reading_bar(kind: str, phases: list[str], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A 10^6-op file took a minute with nothing on the screen: in a terminal (and a notebook)
    a bar names each phase and counts the items; small files and WORKBENCH_PROGRESS=0 show
    none."""
    import workbench as wb
    from workbench import _progress
    from workbench.io import load_pytorch_trace
    from workbench.io.text import dot_tokens

    path = INPUTS.write(kind, tmp_path, 2_000)
    load = load_pytorch_trace if kind == "kineto" else wb.load
    monkeypatch.setattr(_progress, "_interactive", lambda: True)  # as in a terminal
    load(path)
    assert capsys.readouterr().err == ""  # under READING_BAR_BYTES: no bar
    monkeypatch.setattr(_progress, "READING_BAR_BYTES", 1)
    monkeypatch.setattr(_progress.Reading, "every", 256)
    monkeypatch.setattr(dot_tokens, "_BAR_TOKENS", 256)
    load(path)
    err = capsys.readouterr().err
    for phase in phases:
        assert phase in err, (phase, err[-500:])
    unit = {"ops_full": "/4000 [", "dot_line": "char", "kineto": "/2001 ["}[kind]
    assert unit in err  # the items are counted
    monkeypatch.setenv("WORKBENCH_PROGRESS", "0")
    load(path)
    assert capsys.readouterr().err == ""


def test_in_a_notebook_the_reading_bar_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench import _progress

    monkeypatch.setattr(_progress, "_interactive", lambda: True)
    monkeypatch.setattr(_progress, "_in_kernel", lambda: True)
    with _progress.reading("g.json", 1 << 30) as bar:
        bar.phase("building tensors and ops", total=10, unit="item")
        bar.advance(10)
        assert bar._bar is not None and bar._bar.leave is True and bar._bar.n == 10
