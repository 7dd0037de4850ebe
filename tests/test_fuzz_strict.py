"""Fuzzing the strict inputs (issue 14): structured but wrong documents for every loader (random
and near-miss keys, random DOT attributes, random field values, negative durations), random option
values for the public entry points, and random command lines for the CLI, in-process and in a few
real subprocesses.

Every case must end in exactly one of: a one-line WorkbenchError (exit 2 with exactly one line
on stderr for the CLI), or a result that passes its check (a graph that schedules and validates,
a schedule that validates, a trace that respects its graph, a plan without overlaps, a report on
disk).  Never another exception, never a hang: each case gets ``SECONDS_PER_CASE`` (SIGALRM).
About 2,500 inputs in all, in about half a minute (the max_examples below).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.errors import WorkbenchError
from workbench.executors.gpu.calibration import FORMAT, VERSION, load_calibration
from workbench.io import load_execution_trace, load_pytorch_trace
from workbench.io.text.dot_attrs import GRAPHVIZ_ATTRS, NODE_ATTRS
from workbench.io.text.json_format import graph_to_dict
from workbench.memory import check_no_overlap
from workbench.simulator.cost_model.devices import device_to_dict, get_device, load_device

SECONDS_PER_CASE = 10
ROOT = Path(__file__).resolve().parents[1]
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture])


# ------------------------------------------------------------------------------- harness
def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"still running after {SECONDS_PER_CASE} s (a hang?)")


@contextlib.contextmanager
def time_limit() -> Iterator[None]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SECONDS_PER_CASE)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def outcome(call: Callable[[], Any], check: Callable[[Any], None]) -> str | None:
    """Run ``call``: its result must pass ``check``, or it raises a one-line WorkbenchError
    (returned).  Anything else fails the test."""
    with time_limit():
        try:
            result = call()
        except WorkbenchError as exc:
            message = str(exc)
            assert message and "\n" not in message and "\r" not in message, repr(message)
            event(type(exc).__name__)
            return message
        check(result)
    event("accepted")
    return None


def valid_graph(g: wb.Graph) -> None:
    assert isinstance(g, wb.Graph)
    if len(g) <= 60:
        s = wb.schedule(g, "nnc").validate()
        assert wb.simulate(s, "h100").respects()


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="wb-fuzz-strict-") as d:
        yield Path(d)


# ------------------------------------------------------------------------------- building blocks
def typos(word: str) -> st.SearchStrategy[str]:
    """Near misses of ``word``: a letter dropped, doubled or changed, or a different case."""
    @st.composite
    def one(draw: st.DrawFn) -> str:
        i = draw(st.integers(0, max(0, len(word) - 1)))
        kind = draw(st.sampled_from(["drop", "double", "change", "upper", "plural"]))
        if kind == "drop":
            return word[:i] + word[i + 1:]
        if kind == "double":
            return word[:i] + word[i:i + 1] * 2 + word[i + 1:]
        if kind == "change":
            return word[:i] + draw(st.sampled_from("aeiouxz_")) + word[i + 1:]
        if kind == "upper":
            return word.upper()
        return word + "s"
    return one()


IDS = st.sampled_from(["a", "b", "c", "d", "e"])
PAIRS = st.sampled_from([[a, b] for a in "abcde" for b in "abcde" if a < b])  # acyclic edges
VALUES = st.one_of(
    st.integers(-10, 10), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.text(max_size=6), st.none(), st.booleans(), st.lists(st.integers(0, 3), max_size=3),
    st.just({}), st.just(1e308), st.just(-0.0))
DEVICE_NAMES = st.one_of(st.sampled_from(["gpu", "GPU", "Cpu", "python", "npu", "copy", "tpu",
                                          "cuda", "", " gpu"]), st.text(max_size=4))
EDGE_LIST_KEYS = ["edges", "ops", "sizes", "durations", "thread_blocks", "devices", "name",
                  "format", "version"]


@st.composite
def edge_lists(draw: st.DrawFn) -> tuple[dict[str, Any], set[str]]:
    """An edge-list document and the unknown top-level keys in it."""
    edges = draw(st.lists(PAIRS, max_size=6))
    doc: dict[str, Any] = {"edges": edges}
    if draw(st.booleans()):
        declared = draw(st.lists(IDS, unique=True, max_size=5))
        doc["ops"] = ({k: draw(st.sampled_from(["conv2d", "relu", "op"])) for k in declared}
                      if draw(st.booleans()) else declared)
    for key in draw(st.sets(st.sampled_from(["sizes", "durations", "thread_blocks"]),
                            max_size=3)):
        doc[key] = draw(st.dictionaries(IDS, st.one_of(st.integers(1, 5000), VALUES),
                                        max_size=3))
    if draw(st.booleans()):
        doc["devices"] = draw(st.dictionaries(IDS, DEVICE_NAMES, max_size=3))
    unknown = set()
    for _ in range(draw(st.integers(0, 2))):
        key = draw(st.one_of(typos(draw(st.sampled_from(EDGE_LIST_KEYS))), st.text(max_size=5)))
        if key not in EDGE_LIST_KEYS:
            unknown.add(key)
        doc[key] = draw(VALUES)
    return doc, unknown


def _small_full() -> dict[str, Any]:
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
                            ops={"a": "conv2d", "b": "relu", "c": "relu", "d": "concat"})
    return graph_to_dict(g)


FULL_SEEDS = [_small_full(), graph_to_dict(wb.models.nnc_while_loop()),
              graph_to_dict(wb.models.nnc_case_of())]


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to an object (dict) inside ``doc``."""
    if isinstance(doc, dict):
        yield prefix
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


@st.composite
def edited_docs(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """A seed document with 1-3 edits in random objects at any depth: a key renamed to a near
    miss, a new key, a value replaced, a key deleted."""
    doc = json.loads(json.dumps(draw(st.sampled_from(seeds))))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(sorted(_paths(doc), key=repr)))
        obj = doc
        for k in where:
            obj = obj[k]
        edit = draw(st.sampled_from(["rename", "add", "replace", "delete"]))
        keys = sorted(obj)
        # drawn values are copied: hypothesis may hand out one object twice, and an edit inside
        # it would then make the document cyclic (seeds with nested objects, such as a device
        # file's gpu_model, reach that)
        if edit == "add" or not keys:
            obj[draw(st.text(min_size=1, max_size=6))] = copy.deepcopy(draw(VALUES))
            continue
        key = draw(st.sampled_from(keys))
        if edit == "rename":
            obj[draw(typos(key))] = obj.pop(key)
        elif edit == "replace":
            obj[key] = copy.deepcopy(draw(st.one_of(VALUES, DEVICE_NAMES)))
        else:
            del obj[key]
    return doc


# ------------------------------------------------------------------------------- graph JSON
@settings(FUZZ, max_examples=400)
@given(case=edge_lists())
def test_edge_list_documents(workdir: Path, case: tuple[dict[str, Any], set[str]]) -> None:
    doc, unknown = case
    path = workdir / "e.json"
    path.write_text(json.dumps(doc))
    message = outcome(lambda: wb.load(path), valid_graph)
    if unknown:  # an unknown key is never silently ignored
        assert message is not None and "unknown key" in message
    declared = doc.get("ops")
    if isinstance(declared, (dict, list)) and not unknown and message is None:
        assert {x for e in doc["edges"] for x in e} <= set(declared)


@settings(FUZZ, max_examples=400)
@given(doc=edited_docs(FULL_SEEDS))
def test_full_form_documents(workdir: Path, doc: dict[str, Any]) -> None:
    path = workdir / "f.json"
    path.write_text(json.dumps(doc))
    outcome(lambda: wb.load(path), valid_graph)


# ------------------------------------------------------------------------------- DOT
ATTR_NAMES = st.one_of(st.sampled_from(sorted(NODE_ATTRS)), st.sampled_from(sorted(GRAPHVIZ_ATTRS)),
                       st.sampled_from(sorted(NODE_ATTRS)).flatmap(typos),
                       st.from_regex(r"[a-z_]{1,8}", fullmatch=True))
ATTR_VALUES = st.one_of(st.sampled_from(["1", "0", "-3", "1e9", "nan", "inf", "gpu", "GPU",
                                         "tpu", "control", "dashed", "conv2d", "2.5", "1e400"]),
                        st.from_regex(r"[a-z0-9.]{1,6}", fullmatch=True))


@st.composite
def dot_documents(draw: st.DrawFn) -> str:
    def attrs() -> str:
        pairs = draw(st.lists(st.tuples(ATTR_NAMES, ATTR_VALUES), max_size=3))
        return f" [{', '.join(f'{k}={json.dumps(v)}' for k, v in pairs)}]" if pairs else ""

    lines = [f"{draw(st.sampled_from(['node', 'edge', 'graph']))}{attrs()};"
             for _ in range(draw(st.integers(0, 2)))]
    lines += [f"{draw(IDS)}{attrs()};" for _ in range(draw(st.integers(0, 3)))]
    lines += [f"{a} -> {b}{attrs()};" for a, b in draw(st.lists(PAIRS, max_size=4))]
    if draw(st.booleans()):
        lines.append(f"{draw(ATTR_NAMES)}={draw(ATTR_VALUES)};")
    return "digraph g {\n" + "\n".join(lines) + "\n}\n"


@settings(FUZZ, max_examples=400)
@given(text=dot_documents())
def test_dot_documents_with_random_attributes(workdir: Path, text: str) -> None:
    path = workdir / "g.dot"
    path.write_text(text)
    message = outcome(lambda: wb.load(path), valid_graph)
    names = {k for k in ATTR_KEY.findall(text)}
    if not names <= (NODE_ATTRS | GRAPHVIZ_ATTRS):  # an unknown attribute is never ignored
        assert message is not None


ATTR_KEY = __import__("re").compile(r"([A-Za-z_][A-Za-z_0-9]*)=")


# ------------------------------------------------------------------------------- device files
DEVICE_SEED = device_to_dict(get_device("h100"))
CALIBRATION_SEED = {"format": FORMAT, "version": VERSION, "device": "h100", "graph": "g",
                    "versions": {}, "spin_overhead_us": None, "host_launch_us": 3.0,
                    "ops": {"a": 1.5, "b": 2.0}, "meta": {}}


@settings(FUZZ, max_examples=250)
@given(doc=edited_docs([DEVICE_SEED]))
def test_device_files(workdir: Path, doc: dict[str, Any]) -> None:
    path = workdir / "d.json"
    path.write_text(json.dumps(doc))

    def check(spec: Any) -> None:
        assert spec.sm_count > 0 and math.isfinite(spec.peak_tflops)

    outcome(lambda: load_device(path), check)


@settings(FUZZ, max_examples=150)
@given(doc=edited_docs([CALIBRATION_SEED]))
def test_calibration_files(workdir: Path, doc: dict[str, Any]) -> None:
    path = workdir / "c.json"
    path.write_text(json.dumps(doc))

    def check(table: Any) -> None:
        assert all(math.isfinite(v) and v >= 0 for v in table.ops.values())

    outcome(lambda: load_calibration(path), check)


# ------------------------------------------------------------------------------- profiler traces
@st.composite
def kineto_documents(draw: st.DrawFn) -> dict[str, Any]:
    events = []
    for k in range(draw(st.integers(1, 5))):
        events.append({"ph": draw(st.sampled_from(["X", "X", "i"])),
                       "cat": draw(st.sampled_from(["kernel", "cpu_op", "gpu_memcpy", "x"])),
                       "name": draw(st.sampled_from(["gemm", "aten::mm", "relu", "k\n1"])),
                       "pid": 0, "tid": draw(st.sampled_from([7, 8, "stream 9"])),
                       "ts": draw(st.one_of(st.floats(-5, 100), st.just("3"), VALUES)),
                       "dur": draw(st.one_of(st.floats(-5, 50), VALUES)),
                       "args": {"stream": draw(st.sampled_from([7, 8, None])),
                                "Record function id": k + 1}})
    return {"traceEvents": events}


def valid_trace(trace: Any) -> None:
    assert (trace.df["end_us"] >= trace.df["start_us"]).all()
    assert (trace.df["duration_us"] >= 0).all()


@settings(FUZZ, max_examples=250)
@given(doc=kineto_documents())
def test_profiler_traces(workdir: Path, doc: dict[str, Any]) -> None:
    path = workdir / "k.json"
    path.write_text(json.dumps(doc))
    message = outcome(lambda: load_pytorch_trace(path), valid_trace)
    used = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] != "x"]
    if any(isinstance(e["dur"], (int, float)) and not isinstance(e["dur"], bool)
           and e["dur"] < 0 for e in used):
        assert message is not None  # negative durations are never clamped silently


ET_NODES = [{"id": 1, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1},
            {"id": 2, "name": "aten::relu", "ctrl_deps": 1,
             "inputs": {"values": [[4, 5, 0, 8, 4, "cpu"]], "shapes": [[2, 4]],
                        "types": ["Tensor"]},
             "outputs": {"values": [[6, 7, 0, 8, 4, "cpu"]], "shapes": [[2, 4]],
                         "types": ["Tensor"]},
             "attrs": [{"name": "rf_id", "type": "uint64", "value": 1}]}]


@settings(FUZZ, max_examples=100)
@given(doc=kineto_documents())
def test_execution_trace_with_random_kineto(workdir: Path, doc: dict[str, Any]) -> None:
    et, kineto = workdir / "et.json", workdir / "et_k.json"
    et.write_text(json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": ET_NODES}))
    kineto.write_text(json.dumps(doc))
    outcome(lambda: load_execution_trace(et, kineto), valid_trace)


# ------------------------------------------------------------------------------- entry points
DIAMOND = wb.models.nnc_diamond()
OPTION_NAMES = st.sampled_from(["max_streams", "memory_limit_bytes", "variant", "r", "s",
                                "priorities", "device", "mode", "max_stream", "seed"])
OPTION_VALUES = st.one_of(VALUES, st.sampled_from([1, 2, 64, 1 << 40, "h100", "H100", "eager",
                                                   ["bottom_level"], "documented"]))


@settings(FUZZ, max_examples=300)
@given(policy=st.one_of(st.sampled_from(wb.policies()), typos("nnc")),
       options=st.dictionaries(OPTION_NAMES, OPTION_VALUES, max_size=2),
       device=st.one_of(st.sampled_from(wb.devices()), st.sampled_from(["H100", "tpu", ""])),
       mode=st.sampled_from(["eager", "graph", "Graph", "sink"]),
       precision=st.sampled_from(["auto", "fp16", "FP16", "int8"]),
       planner=st.sampled_from(["somas", "greedy_by_size", "exact", "somaz", "naive"]))
def test_entry_point_options(policy: str, options: dict[str, Any], device: str, mode: str,
                             precision: str, planner: str) -> None:
    schedule = outcome(lambda: wb.schedule(DIAMOND, policy, **options), lambda s: None)
    if schedule is not None:
        return
    s = wb.schedule(DIAMOND, policy, **options).validate()
    trace = None

    def simulated(t: Any) -> None:
        nonlocal trace
        trace = t
        assert t.respects()

    outcome(lambda: wb.simulate(s, device, mode=mode, precision=precision), simulated)
    if trace is not None:
        outcome(lambda: wb.plan_memory(trace, planner), check_no_overlap)


# ------------------------------------------------------------------------------- the CLI
@pytest.fixture(scope="module")
def cli_files(workdir: Path) -> dict[str, str]:
    files = {"good.json": json.dumps(graph_to_dict(DIAMOND)),
             "typo.json": json.dumps({"edges": [["a", "b"]], "duration": {"a": 5}}),
             "empty.json": '{"edges": []}', "garbage.json": "\x00\x01{[",
             "good.dot": "digraph g { a [kind=conv2d]; a -> b -> c }",
             "typo.dot": "digraph g { a [flopz=1]; a -> b }", "graph.txt": "a -> b",
             "garbage.onnx": "not protobuf", "evil.json": json.dumps(
                 {"name": "\x1b[31mx\x07", "edges": [["a\x1b]0;t\x07", "b"]]})}
    out = {}
    for name, text in files.items():
        (workdir / name).write_text(text)
        out[name] = str(workdir / name)
    (workdir / "folder.json").mkdir(exist_ok=True)
    out["folder.json"] = str(workdir / "folder.json")
    out["missing.json"] = str(workdir / "missing.json")
    return out


TINY_MODELS = ["nnc_diamond", "textbook_mul_sub_add", "raf_three_branches", "nnc_while_loop",
               "random_dag", "layered_dag"]


@st.composite
def command_lines(draw: st.DrawFn, files: dict[str, str], out_dir: str) -> list[str]:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([["policies"], ["models"], ["devices"], ["--version"],
                                     ["compare", "--help"], [], ["bogus"], ["--nope"]]))
    argv = ["compare"]
    if draw(st.booleans()):  # a command line that should work: valid values only
        if draw(st.booleans()):
            argv += ["--model", draw(st.sampled_from(TINY_MODELS[:4]))]  # up to 8 ops
        else:
            argv.append(draw(st.sampled_from([files["good.json"], files["good.dot"],
                                              files["evil.json"]])))
        argv += ["--policies", ",".join(draw(st.lists(st.sampled_from(wb.policies()),
                                                      min_size=1, max_size=3)))]
        for flag, values in (("--device", ["h100", "V100", "t4"]), ("--mode", ["eager", "graph"]),
                             ("--max-streams", ["1", "2"]), ("--budget", ["0", "30"]),
                             ("--columns", ["all", "policy,arena_mib"])):
            if draw(st.booleans()):
                argv += [flag, draw(st.sampled_from(values))]
        return [*argv, "-o", f"{out_dir}/ok.html", "--no-progress"]
    source = draw(st.sampled_from(["model", "model", "file", "file", "both", "neither"]))
    if source in ("model", "both"):
        argv += ["--model", draw(st.one_of(st.sampled_from(TINY_MODELS), typos("nnc_diamond")))]
        for _ in range(draw(st.integers(0, 2))):
            argv += ["--param", draw(st.sampled_from(
                ["n_ops=6", "n_ops=-1", "n_ops=x", "seed=3", "n_layers=2", "width=2", "x",
                 "=3", "nope=1", "edge_prob=0.5", "edge_prob=nan", "batch=0"]))]
    if source in ("file", "both"):
        argv.append(draw(st.sampled_from(sorted(files.values()))))
    optional = {
        "--policies": st.one_of(st.lists(st.one_of(st.sampled_from(wb.policies()),
                                                   typos("asap")), min_size=1, max_size=3
                                         ).map(",".join), st.just(",")),
        "--device": st.one_of(st.sampled_from(["h100", "V100", "t4"]), typos("a100")),
        "--mode": st.sampled_from(["eager", "graph", "Graph"]),
        "--precision": st.sampled_from(["auto", "fp16", "int4"]),
        "--max-streams": st.sampled_from(["1", "2", "0", "-1", "x", "99999"]),
        "--budget": st.sampled_from(["0", "5", "-1", "nan", "inf", "x"]),
        "--columns": st.sampled_from(["all", "policy,arena_mib", "makespan", "policy,,syncs"]),
        "--batch": st.sampled_from(["1", "2", "0", "x"]),
        "--dim": st.sampled_from(["batch=2", "x"]),
    }
    for flag in draw(st.sets(st.sampled_from(sorted(optional)), max_size=3)):
        argv += [flag, draw(optional[flag])]
    out = draw(st.sampled_from([f"{out_dir}/r.html", f"{out_dir}/r.html", out_dir,
                                f"{out_dir}/missing/r.html", "/proc/r.html", ""]))
    argv += ["-o", out, "--no-progress"]
    if draw(st.integers(0, 5)) == 0:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(
            ["--bogus", "-x", "--", "extra", "--policies"])))
    return argv


def run_main(argv: list[str]) -> tuple[int, str, str]:
    from workbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with time_limit(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def check_cli(argv: list[str], code: int, out: str, err: str) -> None:
    assert "Traceback" not in err, err
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("workbench: error: "), (argv, err)
        assert "\x1b" not in err
        event("exit 2")
        return
    assert code == 0, (argv, code, err)
    assert "\x1b" not in out and "\x07" not in out
    if argv[:1] == ["compare"] and "--help" not in argv:
        assert "best:" in out
        report = Path(argv[argv.index("-o") + 1])
        assert report.is_file()
    event("exit 0")


@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_cli_in_process(cli_files: dict[str, str], workdir: Path, data: st.DataObject,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    # The page (test_report.py, test_browser.py) and the exact optimum of tiny graphs
    # (test_optimum.py) are stand-ins here, to keep each run cheap; everything else (checks,
    # loading, scheduling, simulating, planning, the atomic write, the table) is real.
    report = importlib.import_module("workbench.orchestration.report")
    monkeypatch.setattr(report, "render", lambda c, **_: "<html></html>")
    monkeypatch.setattr(importlib.import_module("workbench.orchestration.compare"), "_optimum",
                        lambda *a, **k: math.nan)
    monkeypatch.chdir(workdir)  # a relative output name lands in the scratch folder
    argv = data.draw(command_lines(cli_files, str(workdir)))
    check_cli(argv, *run_main(argv))


@settings(FUZZ, max_examples=5)
@given(data=st.data())
def test_cli_subprocess(cli_files: dict[str, str], workdir: Path, data: st.DataObject,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)  # a relative output name lands in the scratch folder
    argv = data.draw(command_lines(cli_files, str(workdir)))
    run = subprocess.run([sys.executable, "-m", "workbench.cli", *argv], capture_output=True,
                         text=True, timeout=120, cwd=workdir,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    check_cli(argv, run.returncode, run.stdout, run.stderr)
