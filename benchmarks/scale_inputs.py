"""Write the big inputs of the scale findings (issue 34 #10, issue 43 #9) into a folder, to
measure the readers, ``compare`` and ``import`` on them (``benchmarks/scale_bounds.py`` runs
them all under a time and memory bound; ``/usr/bin/time -v`` works as well).

    .venv/bin/python benchmarks/scale_inputs.py OUT_DIR [--only KIND,...] [--scale 0.01]
                                                [--size KIND=N ...] [--list]

Each kind is one file, streamed to disk (writing it needs little memory) and deterministic
(the same arguments write the same bytes).  ``--scale`` multiplies every default size (0.01:
a quick check); ``--size chain=5000`` sets one.  The kinds (:data:`KINDS`, default sizes):

* ``wide`` (wide_op.json, 100,000): a 4-op graph whose op ``wide`` lists N outputs the tensors
  table does not declare (zero-byte tensors, ``docs/graph-format.md``), all read by one op ``c``:
  they are live together.
* ``kineto`` (kineto.json, 1,000,000 events): a PyTorch profiler (Kineto) trace of a GPU run:
  half kernels on 4 CUDA streams, half the ``cudaLaunchKernel`` calls that launched them
  (joined by ``args.correlation``), ~200 bytes an event.
* ``kineto_extra`` (kineto_extra.json, 1,000,000 extra events): 2,000 kernels and their launches
  in one ProfilerStep, plus N events that are not ops: nested ``cpu_op`` s (``aten::linear`` >
  ``aten::addmm``), ``python_function`` frames, ``ac2g`` flow pairs, ``[memory]`` instants,
  counters and ``cudaStreamSynchronize`` calls, as a real profile of a long host loop holds.
* ``kineto_steps`` (kineto_steps.json, 1,000,000 events): N / 9 ``ProfilerStep`` s of 4 kernels
  and their 4 launches each (a profile of many short steps).
* ``kineto_waits`` (kineto_waits.json, 1,000,000 events): a ``cudaEventRecord`` after a kernel on
  stream 7, then N / 2 ``cudaStreamWaitEvent`` calls and N / 4 kernels (with their launches) all
  on stream 7, no ``cuda_sync`` events: every wait is pending at every kernel.
* ``chain`` (chain.json, 1,000,000 ops): a chain in the edge-list form (``op0 -> op1 -> ...``).
* ``ops_full`` (ops_full.json, 1,000,000 ops): the full form, every op with its fields, its
  output in the tensors table and two inputs (op k reads ops k-1 and k // 2).
* ``ops_edges`` (ops_edges.json, 1,000,000 ops): the same DAG in the edge-list form, with an
  ``ops`` kind table and ``durations``.
* ``control`` (control_ops.json, 100,000 control ops): a chain alternating ``while`` (a 2-op
  body) and ``case_of`` (two 1-op branches) ops.
* ``attr_list`` (attr_list.json, 1,000,000 elements): a 3-op graph whose ``reshape`` op has a
  ``shape`` attribute of N elements and an undeclared attribute ``table`` of N numbers.
* ``outputs`` (many_outputs.json, 1,000,000 outputs): N ops (each a source, ``relu``) whose N
  output tensors are all listed in the graph's ``outputs``.
* ``fan_out`` / ``fan_in`` (fan_out.json / fan_in.json, 200,000): one op whose output N
  consumers read, and N producers whose outputs one op reads (full form).
* ``fan_out_dot`` / ``fan_in_dot`` (fan_out.dot / fan_in.dot, 200,000): the same fans in DOT,
  as one edge statement with a ``{...}`` group, on one line.
* ``dot_line`` (one_line.dot, 200,000 nodes): a DOT file on ONE line: N node statements with
  attributes, then the chain ``n0 -> n1 -> ...`` through all of them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

MIB = 1 << 20
_HEADER = '{"format": "schedule-workbench-graph", "version": 1, "name": "%s",\n'


def _join(f: TextIO, items: Iterable[str], per_line: int) -> None:
    """Write ``items`` comma-separated, ``per_line`` to a line (0: all on one line)."""
    for k, item in enumerate(items):
        if k:
            f.write(",\n" if per_line and k % per_line == 0 else ", ")
        f.write(item)


def _op_json(op_id: str, kind: str, inputs: Iterable[str], outputs: Iterable[str],
             **fields: object) -> str:
    return json.dumps({"id": op_id, "kind": kind, "inputs": list(inputs),
                       "outputs": list(outputs), **fields})


# ================================================================================ graph JSON
def write_wide_op(path: Path, outputs: int) -> None:
    """The 4-op graph ``a -> wide -> c -> d`` whose ``wide`` has ``outputs`` zero-byte outputs,
    all read by ``c`` (a concat): every one of them is live at once, from ``wide`` to ``c``."""
    with path.open("w") as f:
        f.write(_HEADER % "wide_op")
        f.write(' "tensors": [\n')
        f.write(',\n'.join(json.dumps({"id": f"{op}:out", "size_bytes": MIB, "producer": op,
                                       "role": "activation"}) for op in ("a", "c", "d")))
        f.write('],\n "ops": [\n')
        f.write(_op_json("a", "relu", [], ["a:out"], bytes_read=MIB, bytes_written=MIB) + ",\n")
        f.write('  {"id": "wide", "kind": "split", "inputs": ["a:out"], "bytes_read": 1048576, '
                '"outputs": [')
        _join(f, (f'"w{k}"' for k in range(outputs)), per_line=1000)
        f.write(']},\n')
        f.write('  {"id": "c", "kind": "concat", "outputs": ["c:out"], "bytes_written": 1048576, '
                '"inputs": [')
        _join(f, (f'"w{k}"' for k in range(outputs)), per_line=1000)
        f.write(']},\n')
        f.write(_op_json("d", "relu", ["c:out"], ["d:out"], bytes_read=MIB,
                         bytes_written=MIB) + "\n")
        f.write(']}\n')


def write_chain(path: Path, n: int) -> None:
    """A chain of ``n`` ops, edge-list form."""
    with path.open("w") as f:
        f.write('{"name": "chain", "edges": [')
        _join(f, (f'["op{k}", "op{k + 1}"]' for k in range(n - 1)), per_line=500)
        f.write(']}\n')


_KINDS = ("relu", "add", "matmul", "layer_norm")


def _parents(k: int) -> list[int]:
    """The ops op ``k`` of the ops_full / ops_edges DAG reads: k - 1 and k // 2 (once)."""
    return sorted({k - 1, k // 2}) if k > 1 else [0] if k == 1 else []


def write_ops_full(path: Path, n: int) -> None:
    """``n`` ops in the full form (every field written), op k reading ops k-1 and k // 2."""
    with path.open("w") as f:
        f.write(_HEADER % "ops_full")
        f.write(' "tensors": [\n')
        _join(f, (f'{{"id": "t{k}", "size_bytes": {4096 * (1 + k % 7)}, "producer": "op{k}", '
                  f'"role": "activation", "shape": [{1024 * (1 + k % 7)}], "dtype": "float32"}}'
                  for k in range(n)), per_line=1)
        f.write('],\n "ops": [\n')
        _join(f, (_op_json(f"op{k}", _KINDS[k % 4], (f"t{p}" for p in _parents(k)), [f"t{k}"],
                           device="gpu", flops=float(1000 * (k % 13)), bytes_read=8192,
                           bytes_written=4096, thread_blocks=1 + k % 80, duration_us=None,
                           workspace_bytes=0, attrs={})
                  for k in range(n)), per_line=1)
        f.write(f'],\n "control_edges": [], "outputs": ["t{n - 1}"]}}\n')


def write_ops_edges(path: Path, n: int) -> None:
    """The ops_full DAG of ``n`` ops in the edge-list form, with kinds and durations."""
    with path.open("w") as f:
        f.write('{"name": "ops_edges", "edges": [')
        _join(f, (f'["op{p}", "op{k}"]' for k in range(n) for p in _parents(k)), per_line=500)
        f.write('],\n "ops": {')
        _join(f, (f'"op{k}": "{_KINDS[k % 4]}"' for k in range(n)), per_line=500)
        f.write('},\n "durations": {')
        _join(f, (f'"op{k}": {1 + k % 9}.5' for k in range(n)), per_line=500)
        f.write('}}\n')


def _tensor(tid: str, size: int, producer: str | None, role: str = "activation") -> str:
    return json.dumps({"id": tid, "size_bytes": size, "producer": producer, "role": role})


def _sub(name: str, inputs: list[str], ops: list[str], tensors: list[str],
         outputs: list[str]) -> str:
    return (f'{{"format": "schedule-workbench-graph", "version": 1, "name": "{name}", '
            f'"tensors": [{", ".join(tensors)}], "ops": [{", ".join(ops)}], '
            f'"control_edges": [], "outputs": {json.dumps(outputs)}}}')


def write_control(path: Path, n: int) -> None:
    """A chain of ``n`` control ops alternating ``while`` (body: relu then add, 3 iterations)
    and ``case_of`` (branches: relu, or add), each reading the previous one's output."""
    body = _sub("body", ["h"], [_op_json("b1", "relu", ["h"], ["u"], duration_us=2.0),
                                _op_json("b2", "add", ["u"], ["h2"], duration_us=3.0)],
                [_tensor("h", 256, None, "input"), _tensor("u", 256, "b1"),
                 _tensor("h2", 256, "b2")], ["h2"])
    empty = _sub("empty", [], [], [], [])
    branches = [{"name": name, "graph": json.loads(_sub(
        name, ["x"], [_op_json("k", kind, ["x"], ["y"], duration_us=2.0)],
        [_tensor("x", 256, None, "input"), _tensor("y", 256, "k")], ["y"]))}
        for name, kind in (("a", "relu"), ("b", "add"))]
    with path.open("w") as f:
        f.write(_HEADER % "control_ops")
        f.write(f' "tensors": [{_tensor("s", 256, "src")}],\n "ops": [\n')
        f.write(_op_json("src", "relu", [], ["s"], duration_us=1.0))
        prev = "s"
        for k in range(n):
            out = f"c{k}"
            if k % 2 == 0:
                attrs = (f'{{"cond": {empty}, "body": {body}, "carried": [["h", "{prev}", "h2"]],'
                         f' "flag": null, "iterations": 3}}')
                f.write(f',\n{{"id": "w{k}", "kind": "while", "inputs": ["{prev}"], '
                        f'"outputs": ["{out}"], "attrs": {attrs}}}')
            else:
                attrs = json.dumps({"branches": branches, "selector": None, "default": k % 2,
                                    "bind": {"x": prev}})
                f.write(f',\n{{"id": "k{k}", "kind": "case_of", "inputs": ["{prev}"], '
                        f'"outputs": ["{out}"], "attrs": {attrs}}}')
            prev = out
        f.write('\n]}\n')


def write_attr_list(path: Path, n: int) -> None:
    """``a -> r -> b`` where ``r`` (reshape) has a ``shape`` of ``n`` ones and an undeclared
    ``table`` of ``n`` numbers."""
    with path.open("w") as f:
        f.write(_HEADER % "attr_list")
        f.write(' "tensors": [],\n "ops": [\n')
        f.write(_op_json("a", "relu", [], ["a:out"], duration_us=1.0) + ",\n")
        f.write('{"id": "r", "kind": "reshape", "inputs": ["a:out"], "outputs": ["r:out"], '
                '"duration_us": 1.0, "attrs": {"shape": [')
        _join(f, ("1" for _ in range(n)), per_line=2000)
        f.write('],\n "table": [')
        _join(f, (str(k % 1000) for k in range(n)), per_line=2000)
        f.write(']}},\n')
        f.write(_op_json("b", "relu", ["r:out"], ["b:out"], duration_us=1.0) + "\n]}\n")


def write_outputs(path: Path, n: int) -> None:
    """``n`` source ops whose ``n`` outputs are all graph outputs."""
    with path.open("w") as f:
        f.write(_HEADER % "many_outputs")
        f.write(' "tensors": [],\n "ops": [\n')
        _join(f, (f'{{"id": "o{k}", "kind": "relu", "outputs": ["o{k}:out"], '
                  f'"duration_us": 1.0}}' for k in range(n)), per_line=1)
        f.write('],\n "outputs": [')
        _join(f, (f'"o{k}:out"' for k in range(n)), per_line=1000)
        f.write(']}\n')


def write_fan(path: Path, n: int, *, out: bool) -> None:
    """One op read by ``n`` consumers (``out``), or ``n`` producers read by one op."""
    with path.open("w") as f:
        f.write(_HEADER % ("fan_out" if out else "fan_in"))
        f.write(' "tensors": [],\n "ops": [\n')
        if out:
            f.write(_op_json("src", "relu", [], ["src:out"], duration_us=1.0))
            for k in range(n):
                f.write(",\n" + _op_json(f"c{k}", "relu", ["src:out"], [f"c{k}:out"],
                                         duration_us=1.0))
        else:
            for k in range(n):
                f.write(_op_json(f"p{k}", "relu", [], [f"p{k}:out"], duration_us=1.0) + ",\n")
            f.write('{"id": "sink", "kind": "concat", "outputs": ["sink:out"], '
                    '"duration_us": 1.0, "inputs": [')
            _join(f, (f'"p{k}:out"' for k in range(n)), per_line=1000)
            f.write(']}')
        f.write('\n]}\n')


# ================================================================================ DOT
def write_fan_dot(path: Path, n: int, *, out: bool) -> None:
    """A fan as one DOT edge statement with a group, on one line."""
    group = "{" + " ".join(f"n{k}" for k in range(n)) + "}"
    edge = f"src -> {group}" if out else f"{group} -> sink"
    path.write_text(f"digraph {'fan_out' if out else 'fan_in'} {{ {edge} }}\n")


def write_dot_line(path: Path, n: int) -> None:
    """``n`` node statements with attributes and a chain through them, all on one line."""
    with path.open("w") as f:
        f.write("digraph one_line { ")
        for k in range(n):
            f.write(f'n{k} [kind={_KINDS[k % 4]}, duration_us={1 + k % 9}, label="n {k}"]; ')
        f.write(" -> ".join(f"n{k}" for k in range(n)))
        f.write(" }")  # no newline at all: the whole file is one line


# ================================================================================ Kineto
_KERNELS = ["void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add>",
            "ampere_sgemm_128x64_tn", "void cudnn::bn_fw_inf_1C11_kernel_NCHW<float>",
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"]


def _launch(ts: float, corr: int, name: str = "cudaLaunchKernel") -> str:
    return (f'{{"ph": "X", "cat": "cuda_runtime", "name": "{name}", "pid": 1, "tid": 1, '
            f'"ts": {ts:.3f}, "dur": 2.0, "args": {{"correlation": {corr}, "cbid": 211}}}}')


def _kernel(ts: float, corr: int, stream: int, dur: float = 15.0) -> str:
    return (f'{{"ph": "X", "cat": "kernel", "name": "{_KERNELS[corr % 4]}", "pid": 0, '
            f'"tid": {stream}, "ts": {ts:.3f}, "dur": {dur}, "args": {{"device": 0, '
            f'"stream": {stream}, "correlation": {corr}, "grid": [{1 + corr % 64}, 1, 1], '
            f'"block": [256, 1, 1]}}}}')


def _step(number: int, ts: float, dur: float) -> str:
    return json.dumps({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}",
                       "pid": 1, "tid": 1, "ts": ts, "dur": dur})


def _kineto(path: Path, events: Iterable[str]) -> None:
    with path.open("w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],\n'
                ' "traceEvents": [\n')
        _join(f, events, per_line=1)
        f.write('\n]}\n')


def write_kineto(path: Path, events: int) -> None:
    """A Kineto trace of ``events`` events (kernels and their launches, one profiler step)."""
    kernels = events // 2

    def gen() -> Iterable[str]:
        yield _step(1, 1000.0, 5.0 * kernels + 100.0)  # the wrapping step first, as Kineto
        for k in range(kernels):
            yield _launch(1000.0 + 5.0 * k + 1.0, k + 1)
            yield _kernel(1000.0 + 20.0 * (k // 4) + 50.0, k + 1, 7 + k % 4)

    _kineto(path, gen())


def write_kineto_extra(path: Path, extra: int) -> None:
    """2,000 kernels and launches in one step, plus ``extra`` events that are not ops."""
    kernels = 2000
    span = 10.0 * max(extra, kernels) + 100.0

    def gen() -> Iterable[str]:
        yield _step(1, 1000.0, span)
        for k in range(kernels):
            yield _launch(1000.0 + 5.0 * k + 1.0, k + 1)
            yield _kernel(1000.0 + 20.0 * (k // 4) + 50.0, k + 1, 7 + k % 4)
        made = 0
        k = 0
        while made < extra:
            ts = 1000.0 + 10.0 * k
            batch = [
                f'{{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 2, '
                f'"ts": {ts:.3f}, "dur": 8.0, "args": {{"External id": {k}}}}}',
                f'{{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 2, '
                f'"ts": {ts + 1:.3f}, "dur": 6.0}}',
                f'{{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py'
                f'(114): forward", "pid": 1, "tid": 2, "ts": {ts:.3f}, "dur": 9.0}}',
                f'{{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": {k}, "pid": 1, "tid": 2, '
                f'"ts": {ts + 2:.3f}}}',
                f'{{"ph": "f", "cat": "ac2g", "name": "ac2g", "id": {k}, "pid": 0, "tid": 7, '
                f'"ts": {ts + 3:.3f}, "bp": "e"}}',
                f'{{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, '
                f'"tid": 2, "ts": {ts + 4:.3f}, "s": "t", "args": {{"Bytes": 4096, '
                f'"Total Allocated": {4096 * (k % 100)}}}}}',
                f'{{"ph": "C", "name": "GPU 0 Est. SM Efficiency", "pid": 0, '
                f'"ts": {ts:.3f}, "args": {{"value": 0.5}}}}',
                f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", '
                f'"pid": 1, "tid": 2, "ts": {ts + 5:.3f}, "dur": 1.0, '
                f'"args": {{"correlation": {10**7 + k}}}}}',
            ]
            yield from batch[:extra - made]
            made += len(batch)
            k += 1

    _kineto(path, gen())


def write_kineto_steps(path: Path, events: int) -> None:
    """``events // 9`` profiler steps of 4 kernels and their 4 launches each."""
    steps = max(1, events // 9)

    def gen() -> Iterable[str]:
        for s in range(steps):
            t0 = 1000.0 + 100.0 * s
            yield _step(s + 1, t0, 90.0)
            for j in range(4):
                corr = 4 * s + j + 1
                yield _launch(t0 + 1.0 + 2.5 * j, corr)
                yield _kernel(t0 + 20.0 + 16.0 * j, corr, 7)

    _kineto(path, gen())


def write_kineto_waits(path: Path, events: int) -> None:
    """A record after one kernel on stream 7, ``events // 2`` waits on it, then ``events // 4``
    kernels (and launches) on stream 7: no ``cuda_sync`` events, so the reader infers the waits
    from the runtime calls, and every one of them is pending at every kernel."""
    waits, kernels = events // 2, events // 4

    def gen() -> Iterable[str]:
        yield _launch(1000.0, 1)
        yield _kernel(1010.0, 1, 7)
        yield _launch(1003.0, 2, "cudaEventRecord")
        for w in range(waits):
            yield _launch(1004.0 + 0.001 * w, 3 + w, "cudaStreamWaitEvent")
        base = 3 + waits
        t = 1010.0 + 0.001 * waits
        for k in range(kernels):
            yield _launch(t + 2.0 * k, base + k)
            yield _kernel(t + 30.0 + 16.0 * k, base + k, 7)

    _kineto(path, gen())


# ================================================================================ the table
#: kind -> (file name, writer, default size, what the size counts)
KINDS: dict[str, tuple[str, Callable[[Path, int], None], int, str]] = {
    "wide": ("wide_op.json", write_wide_op, 100_000, "outputs of one op"),
    "kineto": ("kineto.json", write_kineto, 1_000_000, "events"),
    "kineto_extra": ("kineto_extra.json", write_kineto_extra, 1_000_000, "extra events"),
    "kineto_steps": ("kineto_steps.json", write_kineto_steps, 1_000_000, "events"),
    "kineto_waits": ("kineto_waits.json", write_kineto_waits, 1_000_000, "events"),
    "chain": ("chain.json", write_chain, 1_000_000, "ops"),
    "ops_full": ("ops_full.json", write_ops_full, 1_000_000, "ops"),
    "ops_edges": ("ops_edges.json", write_ops_edges, 1_000_000, "ops"),
    "control": ("control_ops.json", write_control, 100_000, "control ops"),
    "attr_list": ("attr_list.json", write_attr_list, 1_000_000, "attribute elements"),
    "outputs": ("many_outputs.json", write_outputs, 1_000_000, "graph outputs"),
    "fan_out": ("fan_out.json", lambda p, n: write_fan(p, n, out=True), 200_000, "consumers"),
    "fan_in": ("fan_in.json", lambda p, n: write_fan(p, n, out=False), 200_000, "producers"),
    "fan_out_dot": ("fan_out.dot", lambda p, n: write_fan_dot(p, n, out=True), 200_000,
                    "consumers"),
    "fan_in_dot": ("fan_in.dot", lambda p, n: write_fan_dot(p, n, out=False), 200_000,
                   "producers"),
    "dot_line": ("one_line.dot", write_dot_line, 200_000, "nodes on one line"),
}


def size_of(kind: str, scale: float = 1.0, sizes: dict[str, int] | None = None) -> int:
    """The size ``kind`` is written at: ``sizes[kind]``, else its default times ``scale``."""
    if sizes and kind in sizes:
        return sizes[kind]
    return max(2, int(KINDS[kind][2] * scale))


def write(kind: str, folder: Path, n: int) -> Path:
    """Write the input ``kind`` of size ``n`` into ``folder``; returns its path."""
    name, writer, _, _ = KINDS[kind]
    path = folder / name
    writer(path, n)
    return path


def _size_arg(text: str) -> tuple[str, int]:
    kind, _, n = text.partition("=")
    if kind not in KINDS or not n.isdigit():
        raise argparse.ArgumentTypeError(f"expected KIND=N with KIND one of {', '.join(KINDS)}")
    return kind, int(n)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("out", type=Path, nargs="?", help="folder to write into (created if missing)")
    ap.add_argument("--only", default=",".join(KINDS), help="kinds to write, comma-separated")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every default size")
    ap.add_argument("--size", type=_size_arg, action="append", default=[],
                    help="KIND=N: the size of one kind")
    ap.add_argument("--list", action="store_true", help="list the kinds and their sizes")
    args = ap.parse_args(argv)
    sizes = dict(args.size)
    if args.list or args.out is None:
        for kind, (name, _, _, what) in KINDS.items():
            print(f"{kind:13} {name:20} {size_of(kind, args.scale, sizes):>10,} {what}")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for kind in args.only.split(","):
        if kind not in KINDS:
            ap.error(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
        p = write(kind, args.out, size_of(kind, args.scale, sizes))
        print(f"{p}: {p.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
