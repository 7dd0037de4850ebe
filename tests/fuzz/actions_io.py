"""What the worker does with the cases of :mod:`tests.fuzz.cases_attrs`, ``cases_readers``,
``cases_nested`` and ``cases_roundtrip`` (the ``actions_io.*`` actions; CLI and writer cases
are in :mod:`tests.fuzz.actions_cli`).

Each function takes ``(case, workdir)`` like those of :mod:`tests.fuzz.actions`: it returns
normally when the input went through, raises a one-line ``WorkbenchError`` for a clean refusal,
or returns an ``(outcome, detail)`` pair where it decides itself (a round trip that differs,
a corrupt file repaired with a warning that names the repair).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fuzz.actions import _pipeline, _write


def _warned(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """``fn()`` and the one-line texts of the warnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, [str(w.message).splitlines()[0] if str(w.message) else "" for w in caught]


def read_file(case: Any, workdir: str) -> Any:
    """``data``: (reader, file name, bytes).  Readers: ``graph`` (``wb.load`` and the pipeline),
    ``trace`` (Kineto), ``et`` (an Execution Trace alone), ``device``, ``calibration``.
    ``extra["warn_ok"]``: words of a warning that counts as the refusal a ``refuse`` case needs
    (an ET whose duplicate ids are dropped with a warning naming them); ``extra["expect_ops"]``:
    the number of ops the graph must have (``silent`` when some were lost)."""
    import workbench as wb

    reader, name, payload = case.data
    path = _write(workdir, name, payload)

    def run() -> Any:
        if reader == "graph":
            graph = wb.load(path)
            _pipeline(graph, case.extra.get("policies", ["serial", "nnc"]))
            return graph
        if reader == "trace":
            from workbench.io import load_pytorch_trace

            trace = load_pytorch_trace(path)
            if not (math.isfinite(trace.makespan) and trace.makespan >= 0):
                raise AssertionError(f"impossible measured makespan {trace.makespan}")
            return trace
        if reader == "et":
            from workbench.io import execution_graph

            graph = execution_graph(path)
            _pipeline(graph, ["serial"])
            return graph
        if reader == "device":
            from workbench.simulator.cost_model.devices import load_device

            spec = load_device(path)
            graph = wb.models.random_dag(6, seed=1)
            return wb.simulate(wb.schedule(graph, "nnc"), spec)
        if reader == "calibration":
            from workbench.simulator.cost_model.calibration import load_calibration

            table = load_calibration(path)
            graph = wb.models.random_dag(6, seed=1)
            return wb.simulate(wb.schedule(graph, "serial"), calibration=dict(table.ops))
        raise AssertionError(f"unknown reader {reader!r}")

    value, lines = _warned(run)
    expect = case.extra.get("expect_ops")
    if expect is not None and len(value) != expect:
        return ("silent", f"{len(value)} of {expect} ops loaded, no error")
    words = case.extra.get("warn_ok", ())
    hits = [w for w in lines if any(x in w.lower() for x in words)]
    if case.refuse and hits:
        return ("clean", f"warned: {hits[0][:200]}")
    if case.refuse:
        return ("silent", "accepted without a refusal or a warning naming the problem")
    return None


# ------------------------------------------------------------------------ nested control flow
_LEAF = ('{"ops": [{"id": "leaf", "kind": "relu", "inputs": ["h"], "outputs": ["h_next"], '
         '"duration_us": 1.0}], "tensors": [{"id": "h", "size_bytes": 1024, "role": "input"}, '
         '{"id": "h_next", "size_bytes": 1024, "producer": "leaf"}]}')


def _control_op(kind: str, level: int, src: str, dst: str, inner: str) -> str:
    if kind == "while":
        attrs = ('{"cond": {"ops": [], "tensors": []}, "body": ' + inner
                 + ', "carried": [["h", "' + src + '", "h_next"]], "flag": null, '
                 '"iterations": 1}')
    else:
        attrs = ('{"branches": [{"name": "a", "graph": ' + inner + '}], "selector": null, '
                 '"default": 0, "bind": {"h": "' + src + '"}}')
    return (f'{{"id": "{kind[0]}{level}", "kind": "{kind}", "inputs": ["{src}"], '
            f'"outputs": ["{dst}"], "attrs": ' + attrs + "}")


def nested_text(depth: int, kinds: tuple[str, ...]) -> str:
    """A full-form graph of ``depth`` nested control-flow ops (``kinds`` in turn: ``while``,
    ``case_of``), one ``relu`` at the bottom, every loop one iteration.  Built as text (no
    recursion); O(depth) pieces, O(depth²) characters copied."""
    inner = _LEAF
    for level in range(depth - 1, 0, -1):
        kind = kinds[level % len(kinds)]
        op = _control_op(kind, level, "h", "h_next", inner)
        inner = ('{"ops": [' + op + '], "tensors": [{"id": "h", "size_bytes": 1024, "role": '
                 f'"input"}}, {{"id": "h_next", "size_bytes": 1024, "producer": '
                 f'"{kind[0]}{level}"}}]}}')
    op = _control_op(kinds[0], 0, "x", "y", inner)
    return ('{"format": "schedule-workbench-graph", "version": 1, "name": "nested", "tensors": '
            '[{"id": "x", "size_bytes": 1024, "role": "input"}, {"id": "y", "size_bytes": 1024, '
            f'"producer": "{kinds[0][0]}0"}}], "ops": [' + op + "]}")


def nested(case: Any, workdir: str) -> Any:
    """``data``: (depth, kinds, stage); stage ``load``, ``schedule`` (every policy in
    ``extra["policies"]``), ``simulate``, ``compare`` (``wb.compare`` with ``budget_s`` so each
    policy's worker pickles its result back), ``save`` (JSON out and in again)."""
    import workbench as wb

    depth, kinds, stage = case.data
    text = nested_text(depth, tuple(kinds))
    if "replace" in case.extra:  # one attribute of the outermost op made bad
        old, new = case.extra["replace"]
        at = text.rfind(old)
        if at < 0:
            raise AssertionError(f"the fuzz case's {old!r} is not in the graph")
        text = text[:at] + new + text[at + len(old):]
    graph = wb.load(_write(workdir, "nested.json", text))
    if stage == "load":
        return None
    if stage == "save":
        diff = _differs(graph, wb.load(wb.save(graph, Path(workdir) / "again.json")), "json")
        return ("roundtrip", diff) if diff else None
    if stage == "compare":
        cmp = wb.compare(graph, case.extra.get("policies", ["serial", "nnc"]),
                         show_progress=False, budget_s=case.extra.get("budget_s", 20.0),
                         memory_budget_bytes=None)
        bad = [str(x) for x in cmp.table["status"] if str(x) != "ok"]
        if bad:
            raise AssertionError(f"compare row not ok: {bad[0][:200]}")
        return None
    for policy in case.extra.get("policies", ["serial", "nnc"]):
        sched = wb.schedule(graph, policy)
        sched.validate()
        if stage == "simulate":
            trace = wb.simulate(sched)
            if not (math.isfinite(trace.makespan) and trace.makespan >= 1.0):
                raise AssertionError(f"impossible makespan {trace.makespan} at depth {depth}")
    return None


# ------------------------------------------------------------------------------ round trips
def first_difference(a: Any, b: Any, where: str = "") -> str:
    """Where plain values ``a`` and ``b`` (dicts, lists or tuples, numbers, strings) first
    differ, or ``""``; tuples equal lists, NaN equals NaN.  Iterative (a graph nested 1,000
    deep must not hit the recursion limit here); O(size)."""
    stack = [(a, b, where)]
    while stack:
        x, y, path = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if set(x) != set(y):
                return f"{path[-120:]}: keys {sorted(map(str, set(x) ^ set(y)))[:3]} differ"
            stack.extend((x[k], y[k], f"{path}.{k}") for k in x)
        elif isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                return f"{path[-120:]}: {len(x)} items saved, {len(y)} loaded"
            stack.extend((x[n], y[n], f"{path}[{n}]") for n in range(len(x)))
        elif isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        elif isinstance(x, (dict, list, tuple)) or isinstance(y, (dict, list, tuple)) or x != y:
            return f"{path[-120:]}: {str(x)[:60]} saved, {str(y)[:60]} loaded"
    return ""


def _differs(a: Any, b: Any, fmt: str) -> str:
    """The first difference between graphs ``a`` and ``b`` (every op field, every tensor,
    control edges, outputs; then the simulated serial and nnc makespans), or ``""``."""
    import workbench as wb
    from workbench.io import graph_to_dict

    da, db = graph_to_dict(a), graph_to_dict(b)
    for key in ("control_edges", "outputs"):
        if sorted(map(str, da.get(key) or [])) != sorted(map(str, db.get(key) or [])):
            return f"{fmt}: {key} differ: {str(da.get(key))[:80]} vs {str(db.get(key))[:80]}"
    for key in ("ops", "tensors"):
        xa = {x["id"]: x for x in da[key]}
        xb = {x["id"]: x for x in db[key]}
        if set(xa) != set(xb):
            only = sorted(map(str, set(xa) ^ set(xb)))[:3]
            return f"{fmt}: {key} differ in ids ({len(xa)} vs {len(xb)}; e.g. {only})"
        for k, x in xa.items():
            diff = first_difference(x, xb[k], f"{key[:-1]} {k!r}")
            if diff:
                return f"{fmt}: {diff}"
    if len(a) <= 400:
        for policy in ("serial", "nnc"):
            ma = wb.simulate(wb.schedule(a, policy)).makespan
            mb = wb.simulate(wb.schedule(b, policy)).makespan
            if not math.isclose(ma, mb, rel_tol=1e-9, abs_tol=1e-6):
                return f"{fmt}: {policy} makespan {ma:.6g} µs saved, {mb:.6g} µs loaded"
    return ""


def source_graph(spec: Any, workdir: str) -> Any:
    """The graph a round-trip case starts from: ``("model", name, params)``, ``("random",
    family, n, seed)`` or ``("edges", json_text)`` (an edge-list file with random figures)."""
    import workbench as wb

    if spec[0] == "model":
        return wb.models.build(spec[1], **spec[2])
    if spec[0] == "random":
        family, n, seed = spec[1:4]
        extra = {"layered_dag": (max(1, n // 4), 4), "gnp_dag": (n, 0.2)}.get(family, (n,))
        return getattr(wb.models, family)(*extra, seed=seed)
    return wb.load(_write(workdir, "src.json", spec[1]))


def roundtrip(case: Any, workdir: str) -> Any:
    """``data``: (source, fmt): save the source graph (:func:`source_graph`) as ``fmt``
    (``.json``, ``.dot``, ``.gv``, ``chrome``: its simulated nnc trace, ``device``,
    ``calibration``) and load it back.  A difference with no warning at save is ``roundtrip``;
    one the save announced in a warning is ``clean`` (the format says what it drops)."""
    import workbench as wb

    source, fmt = case.data
    wd = Path(workdir)
    if fmt == "device":
        return _device_roundtrip(source, wd)
    graph = source_graph(source, workdir)
    if fmt == "chrome":
        return _chrome_roundtrip(graph, wd)
    if fmt == "calibration":
        from workbench.simulator.cost_model.calibration import (
            CalibrationTable,
            load_calibration,
            save_calibration,
        )

        ops = {op.id: 1.0 + (hash(op.id) % 997) / 7.0 for op in graph.ops}
        save_calibration(CalibrationTable(ops, device="h100", graph=graph.name), wd / "c.json")
        back = dict(load_calibration(wd / "c.json").ops)
        return None if back == ops else ("roundtrip", "calibration: op times differ")
    from workbench.errors import WorkbenchError

    path, lines = _warned(lambda: wb.save(graph, wd / f"saved{fmt}"))
    try:
        again = wb.load(path)
    except WorkbenchError as exc:
        return ("roundtrip", f"{fmt}: the saved file is refused by its reader: {exc}")
    diff = _differs(graph, again, fmt)
    if diff and lines:
        return ("clean", f"the save warned: {lines[0][:160]}")
    return ("roundtrip", diff) if diff else None


def _device_roundtrip(source: Any, wd: Path) -> Any:
    from workbench.simulator.cost_model.devices import (
        device_to_dict,
        get_device,
        load_device,
        save_device,
        with_overrides,
    )

    name, changes = source
    spec = with_overrides(get_device(name), **changes) if changes else get_device(name)
    from workbench.errors import WorkbenchError

    save_device(spec, wd / "dev.json")
    try:
        back = load_device(wd / "dev.json")
    except WorkbenchError as exc:
        return ("roundtrip", f"device: the saved file is refused by its reader: {exc}")
    diff = first_difference(device_to_dict(spec), device_to_dict(back), "device")
    return ("roundtrip", diff) if diff else None


def _chrome_roundtrip(graph: Any, wd: Path) -> Any:
    import workbench as wb
    from workbench.io import load_pytorch_trace, save_chrome_trace

    trace = wb.simulate(wb.schedule(graph, "nnc"))
    save_chrome_trace(trace, wd / "t.json", time_unit="ns")
    back = load_pytorch_trace(wd / "t.json")
    if not math.isclose(trace.makespan, back.makespan, abs_tol=0.002):
        return ("roundtrip", f"chrome: makespan {trace.makespan:.6g} µs saved, "
                             f"{back.makespan:.6g} µs loaded")
    a = trace.df.groupby("op").agg(start_us=("start_us", "min"), end_us=("end_us", "max"))
    b = back.df.groupby("op").agg(start_us=("start_us", "min"), end_us=("end_us", "max"))
    if set(map(str, a.index)) != set(map(str, b.index)):
        return ("roundtrip", f"chrome: ops differ ({len(a)} saved, {len(b)} loaded)")
    for op in a.index[:200]:
        for col in ("start_us", "end_us"):
            # ns in the file; a zero-length slice is written a few ns long (seen: 2 ns)
            if abs(float(a.at[op, col]) - float(b.at[op, col])) > 0.005:
                return ("roundtrip", f"chrome: op {op!r} {col} {a.at[op, col]:.6g} saved, "
                                     f"{b.at[op, col]:.6g} loaded")
    return None
