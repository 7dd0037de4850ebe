"""A CPU emulator of launch plans, on NumPy twins of the CUDA kernels.

* **Kernel twins** (:data:`TWINS`): one NumPy function per CUDA kernel, reading its arguments *by
  the parameter names parsed from the CUDA source* and memory through the same pointers, row
  mappings and pointer tables as the kernel.  :func:`eval_stmts` runs the fused code generator's
  program.
* **The emulator** (:func:`emulate`): runs a :class:`~workbench.executors.gpu.plan.LaunchPlan` on a
NumPy
  "device" (:class:`Memory`: paged byte arrays per memory space, allocated as they are touched),
  either in issue order or in a
  random interleaving of the streams that respects only the plan's events (``order="random"``), so
  a missing sync or an arena overlap shows up as wrong outputs on the CPU.  Kernels run atomically
  (no overlap inside a kernel), which is enough to exercise every ordering the events allow
  between kernels.

Complexity: one NumPy call per kernel.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from workbench.errors import OptionError, ScheduleError
from workbench.executors.gpu.calls import BINARY_CODES, UNARY_CODES, Call, FusedKernel
from workbench.executors.gpu.plan import Launch, LaunchPlan, Ptr, Record, Wait
from workbench.executors.gpu.reference import (
    BINARY,
    F32,
    UNARY,
    Array,
    batchnorm,
    conv2d,
    layernorm,
    matmul,
    pool2d,
    softmax,
    spin_value,
)
from workbench.executors.gpu.sources import signature
from workbench.executors.reference import draw_inputs, shape_or_flat
from workbench.values.graph import TensorId
from workbench.values.schedule import Schedule

#: Bytes of one page of :class:`Memory` (allocated when first touched).
PAGE_BYTES = 1 << 20
#: Default bound on a plan's device memory the emulator takes on (``WORKBENCH_EMULATOR_MAX_BYTES``).
MAX_EMULATED_BYTES = 4 << 30


def max_emulated_bytes() -> int:
    """The most device memory (all spaces of a plan) one emulation takes on:
    ``WORKBENCH_EMULATOR_MAX_BYTES`` (a positive integer) or :data:`MAX_EMULATED_BYTES`
    (4 GiB)."""
    import os

    text = os.environ.get("WORKBENCH_EMULATOR_MAX_BYTES", "")
    if text.isdigit() and int(text) > 0:
        return int(text)
    return MAX_EMULATED_BYTES


class Memory:
    """NumPy stand-in for device memory: each space of a launch plan is a sparse array of
    :data:`PAGE_BYTES` pages, each allocated (filled with ``fill``) the first time a kernel
    touches it, so memory grows as the run goes (the arena was allocated whole before the
    first kernel).  Pointers are ``Ptr(space, offset)`` values and ``"tables"`` pointers index
    the plan's pointer tables.  O(pages touched) memory."""

    def __init__(self, spaces: Mapping[str, int], tables: Sequence[Any], *,
                 fill: float = float("nan")) -> None:
        self.sizes = {name: -(-int(nbytes) // 4) * 4 for name, nbytes in spaces.items()}
        self.pages: dict[str, dict[int, Array]] = {name: {} for name in spaces}
        self.fill = fill
        self.tables = tuple(tables)

    def _check(self, ptr: Any, count: int) -> int:
        if ptr is None or ptr.space == "null":
            raise OptionError("kernel dereferences a null pointer")
        size = self.sizes.get(ptr.space)
        if size is None or ptr.offset % 4 or ptr.offset < 0 or ptr.offset + 4 * count > size:
            raise OptionError(f"access of {count} floats at {ptr.space}+{ptr.offset} is outside "
                              f"the space ({size or 0} bytes) or misaligned")
        return ptr.offset

    def _page(self, space: str, index: int) -> Array:
        pages = self.pages[space]
        page = pages.get(index)
        if page is None:
            page = np.empty(PAGE_BYTES, dtype=np.uint8)
            page.view(F32)[:] = self.fill
            pages[index] = page
        return page

    def _segments(self, ptr: Any, count: int) -> list[tuple[Array, int, int]]:
        """(page, byte offset in it, float offset in the region) pieces of the region."""
        start = self._check(ptr, count)
        out = []
        done = 0
        while done < 4 * count:
            at = start + done
            index, within = divmod(at, PAGE_BYTES)
            take = min(PAGE_BYTES - within, 4 * count - done)
            out.append((self._page(ptr.space, index)[within:within + take], done // 4,
                        take // 4))
            done += take
        return out

    def read(self, ptr: Any, count: int) -> Array:
        out = np.empty(count, dtype=F32)
        for piece, first, n in self._segments(ptr, count):
            out[first:first + n] = piece.view(F32)
        return out

    def write(self, ptr: Any, values: Array, row_len: int = 0, row_stride: int = 0) -> None:
        flat = np.asarray(values, dtype=F32).reshape(-1)
        n = flat.size
        if n == 0:
            return
        if row_len and row_len != row_stride:  # strided rows: read, scatter, write back
            e = np.arange(n)
            index = (e // row_len) * row_stride + e % row_len
            region = self.read(ptr, int(index[-1]) + 1)
            region[index] = flat
            flat = region
        for piece, first, count in self._segments(ptr, flat.size):
            piece.view(F32)[:] = flat[first:first + count]

    def table(self, ptr: Any, count: int) -> list[Any]:
        if count == 0:
            return []
        start = ptr.offset // 8
        return list(self.tables[start:start + count])


Args = Mapping[str, Any]


def _y(mem: Memory, a: Args, values: Array) -> None:
    mem.write(a[_out_name(a)], values, int(a["row_len"]), int(a["row_stride"]))


def _out_name(a: Args) -> str:
    return "Cout" if "Cout" in a else "y"


def _twin_unary(mem: Memory, a: Args, call: Call) -> None:
    code = {v: k for k, v in _codes()[0].items()}[int(a["code"])]
    x = mem.read(a["x"], int(a["n"]))
    _y(mem, a, UNARY[code](x))


def _twin_binary(mem: Memory, a: Args, call: Call) -> None:
    code = {v: k for k, v in _codes()[1].items()}[int(a["code"])]
    n = int(a["n"])
    _y(mem, a, BINARY[code](mem.read(a["a"], n), mem.read(a["b"], n)))


def _twin_add_n(mem: Memory, a: Args, call: Call) -> None:
    n = int(a["n"])
    ptrs = mem.table(a["ptrs"], int(a["k"]))
    out = mem.read(ptrs[0], n)
    for p in ptrs[1:]:
        out = (out + mem.read(p, n)).astype(F32)
    _y(mem, a, out)


def _twin_batchnorm(mem: Memory, a: Args, call: Call) -> None:
    n, c, inner = int(a["n"]), int(a["C"]), int(a["inner"])
    x = mem.read(a["x"], n).reshape(-1, c, inner)
    out = batchnorm(x, mem.read(a["params"], 4 * c), eps=float(a["eps"]), axis=1)
    code = {v: k for k, v in _codes()[0].items()}[int(a["act"])]
    _y(mem, a, UNARY[code](out))


def _twin_copy(mem: Memory, a: Args, call: Call) -> None:
    _y(mem, a, mem.read(a["x"], int(a["n"])))


def _act_name(code: int) -> str | None:
    name = {v: k for k, v in _codes()[0].items()}[int(code)]
    return None if name == "identity" else name


def _twin_conv(mem: Memory, a: Args, call: Call) -> None:
    n, c, h, w, k = (int(a[s]) for s in ("N", "C", "H", "W", "K"))
    kh, kw = int(a["kh"]), int(a["kw"])
    groups = int(a.get("groups", 1))
    x = mem.read(a["x"], n * c * h * w).reshape(n, c, h, w)
    wt = mem.read(a["w"], k * (c // groups) * kh * kw).reshape(k, c // groups, kh, kw)
    bias = mem.read(a["bias"], k) if a["bias"] is not None and a["bias"].space != "null" else None
    out = conv2d(x, wt, bias, stride=(int(a["sh"]), int(a["sw"])),
                 padding=(int(a["ph"]), int(a["pw"])), groups=groups, act=_act_name(a["act"]),
                 pre_act=_act_name(a["pre_act"]))
    if out.shape[2:] != (int(a["Ho"]), int(a["Wo"])):
        raise OptionError(f"{call.kernel}: Ho/Wo arguments {a['Ho']}x{a['Wo']} disagree with the "
                          f"geometry ({out.shape[2]}x{out.shape[3]})")
    _y(mem, a, out)


def _twin_gemm(mem: Memory, a: Args, call: Call) -> None:
    m, n, k = int(a["M"]), int(a["N"]), int(a["K"])
    batch = call.grid[2]
    sa, sb = int(a["stride_a"]), int(a["stride_b"])
    A = np.stack([mem.read(_shift(a["A"], i * sa), m * k).reshape(m, k) for i in range(batch)])
    B = np.stack([mem.read(_shift(a["B"], i * sb), k * n).reshape(k, n) for i in range(batch)])
    bias = mem.read(a["bias"], n) if a["bias"] is not None and a["bias"].space != "null" else None
    out = matmul(A, B, bias)
    _y(mem, a, UNARY[_act_name(a["act"])](out))


def _shift(ptr: Any, elems: int) -> Any:
    return type(ptr)(ptr.space, ptr.offset + 4 * elems)


def _twin_pool(mem: Memory, a: Args, call: Call) -> None:
    n, c, h, w = (int(a[s]) for s in ("N", "C", "H", "W"))
    x = mem.read(a["x"], n * c * h * w).reshape(n, c, h, w)
    out = pool2d(x, kernel=(int(a["kh"]), int(a["kw"])), stride=(int(a["sh"]), int(a["sw"])),
                 padding=(int(a["ph"]), int(a["pw"])), mode="max" if int(a["mode"]) == 0 else "avg")
    _y(mem, a, out)


def _twin_gap(mem: Memory, a: Args, call: Call) -> None:
    planes, hw = int(a["planes"]), int(a["hw"])
    x = mem.read(a["x"], planes * hw).reshape(planes, hw)
    _y(mem, a, x.astype(np.float64).mean(axis=1).astype(F32))


def _twin_softmax(mem: Memory, a: Args, call: Call) -> None:
    rows, length, inner = int(a["rows"]), int(a["L"]), int(a["inner"])
    x = mem.read(a["x"], rows * length).reshape(rows // inner, length, inner)
    _y(mem, a, softmax(x, axis=1, scale=float(a["scale"])))


def _twin_layernorm(mem: Memory, a: Args, call: Call) -> None:
    rows, d = int(a["rows"]), int(a["D"])
    x = mem.read(a["x"], rows * d).reshape(rows, d)
    _y(mem, a, layernorm(x, mem.read(a["params"], 2 * d), eps=float(a["eps"])))


def _twin_transpose(mem: Memory, a: Args, call: Call) -> None:
    n = int(a["n"])
    dims = [int(a[f"d{i}"]) for i in range(6)]
    strides = [int(a[f"s{i}"]) for i in range(6)]
    x = mem.read(a["x"], n)
    idx = np.zeros(dims, dtype=np.int64)
    for axis, (d, s) in enumerate(zip(dims, strides, strict=True)):
        shape = [1] * 6
        shape[axis] = d
        idx = idx + (np.arange(d) * s).reshape(shape)
    _y(mem, a, x[idx.reshape(-1)])


def _twin_spin(mem: Memory, a: Args, call: Call) -> None:
    ptrs = mem.table(a["in_ptrs"], int(a["n_in"])) if int(a["n_in"]) else []
    value = spin_value([mem.read(p, 1) for p in ptrs])
    n = int(a["n"])
    if n:
        _y(mem, a, np.full(n, value, dtype=F32))


def _twin_stamp(mem: Memory, a: Args, call: Call) -> None:
    return None


def _twin_fused(mem: Memory, a: Args, call: Call) -> None:
    fk = cast(FusedKernel, call.fused)  # a fused call carries its program
    n = fk.n
    ints = {name: int(a[name]) for name, _ in fk.ints}
    ins = []
    for slot, _ in enumerate(fk.inputs):
        ins.append(_FusedInput(mem, a[f"in{slot}"], n))
    env, stores = eval_stmts(fk.stmts, ins, ints, n)
    for slot, values in stores.items():
        mem.write(a[f"out{slot}"], values, int(a[f"rl{slot}"]), int(a[f"rs{slot}"]))
    if fk.reduce is None:
        return
    kind, v, info = fk.reduce
    x = env[v]
    if kind == "softmax":
        out = softmax(x.reshape(-1, int(info["L"]), int(info["inner"])), axis=1,
                      scale=info["scale"])
    elif kind == "layernorm":
        d = int(info["D"])
        out = layernorm(x.reshape(-1, d), ins[info["params"]].get(2 * d), eps=info["eps"])
    else:
        out = x.reshape(int(info["rows"]), -1).astype(np.float64).mean(axis=1).astype(F32)
    mem.write(a["out0"], out, int(a["rl0"]), int(a["rs0"]))


class _FusedInput:
    """A fused kernel input, read lazily: ``n`` elements when loaded elementwise, or a given
    count (batch-norm or layer-norm parameters)."""

    def __init__(self, mem: Memory, ptr: Any, n: int) -> None:
        self.mem, self.ptr, self.n = mem, ptr, n

    def get(self, count: int | None = None) -> Array:
        return self.mem.read(self.ptr, self.n if count is None else count)


def eval_stmts(stmts: Sequence[tuple[Any, ...]], inputs: Sequence[Any], ints: Mapping[str, int],
               n: int) -> tuple[dict[str, Array], dict[int, Array]]:
    """Run a fused kernel's program (:class:`~workbench.executors.gpu.kernels.FusedKernel`
    ``stmts``) over
    all ``n`` elements at once.  ``inputs[k]`` is an array (or has ``.get(count)``); returns the
    variables and the stored outputs by slot."""
    codes_u = {v: k for k, v in _codes()[0].items()}
    codes_b = {v: k for k, v in _codes()[1].items()}

    def load(slot: int, count: int | None = None) -> Array:
        src = inputs[slot]
        if hasattr(src, "get"):
            return np.asarray(src.get(count), dtype=F32).reshape(-1)
        flat = np.asarray(src, dtype=F32).reshape(-1)
        return flat if count is None else flat[:count]

    env: dict[str, Array] = {}
    stores: dict[int, Array] = {}
    for st in stmts:
        tag = st[0]
        if tag == "load":
            env[st[1]] = load(st[2])
        elif tag == "un":
            env[st[1]] = UNARY[codes_u[st[2]]](env[st[3]]).astype(F32)
        elif tag == "bin":
            env[st[1]] = np.asarray(BINARY[codes_b[st[2]]](env[st[3]], env[st[4]]), dtype=F32)
        elif tag == "bn":
            _, v, x, slot, c_name, inner_name, eps = st
            c, inner = ints[c_name], ints[inner_name]
            env[v] = batchnorm(env[x].reshape(-1, c, inner), load(slot, 4 * c), eps=eps,
                               axis=1).reshape(-1)
        elif tag == "store":
            stores[st[1]] = env[st[2]]
        else:
            raise OptionError(f"unknown fused statement {st!r}")
    return env, stores


def _codes() -> tuple[dict[str, int], dict[str, int]]:

    return UNARY_CODES, BINARY_CODES


Twin = Callable[[Memory, Args, Any], None]


#: NumPy twin per CUDA kernel name (fused kernels: ``"fused"``).
TWINS: dict[str, Twin] = {
    "unary": _twin_unary,
    "binary": _twin_binary,
    "add_n": _twin_add_n,
    "batchnorm": _twin_batchnorm,
    "copy_rows": _twin_copy,
    "conv2d_direct": _twin_conv,
    "conv2d_igemm": _twin_conv,
    "gemm": _twin_gemm,
    "pool2d": _twin_pool,
    "global_avgpool": _twin_gap,
    "softmax": _twin_softmax,
    "layernorm": _twin_layernorm,
    "transpose6": _twin_transpose,
    "spin": _twin_spin,
    "stamp": _twin_stamp,
    "fused": _twin_fused,
}


def run_launch(mem: Memory, launch: Launch) -> None:
    """Run one kernel launch of a plan on the NumPy device (arguments by parameter name)."""
    params = signature(launch.call.module, launch.call.kernel, launch.call.source)
    if len(params) != len(launch.args):
        raise OptionError(f"launch of {launch.call.kernel!r} for op {launch.op!r} passes "
                          f"{len(launch.args)} arguments; the kernel takes {len(params)}")
    named = {p.name: v for p, v in zip(params, launch.args, strict=True)}
    twin = TWINS["fused" if launch.call.fused is not None else launch.call.kernel]
    twin(mem, named, launch.call)


def emulate(plan: LaunchPlan, inputs: Mapping[TensorId, Any] | None = None, *, seed: int = 0,
            order: str = "issue", interleave_seed: int = 0,
            tensors: Sequence[TensorId] | None = None) -> dict[TensorId, Array]:
    """Run a launch plan on the NumPy device and return the graph outputs (or ``tensors``).

    ``order="issue"`` runs the steps in the host's issue order (one legal execution);
    ``order="random"`` runs the streams in a random interleaving (``interleave_seed``) in which a
    wait blocks its stream until the matching record has run: only the plan's events order work
    across streams, as on a GPU.  Device memory starts as NaN.  Inputs as :func:`draw_inputs`.
    """
    if order not in ("issue", "random"):
        raise OptionError(f"unknown emulation order {order!r} (known: issue, random)")
    graph = plan.schedule.graph
    total, bound = sum(plan.spaces.values()), max_emulated_bytes()
    if total > bound:
        raise OptionError(f"the plan needs {total / 2**30:.1f} GiB of device memory, more than "
                          f"the CPU emulator takes on ({bound / 2**30:.1f} GiB; "
                          f"WORKBENCH_EMULATOR_MAX_BYTES raises the bound)")
    mem = Memory(plan.spaces, plan.tables)
    for t, value in draw_inputs(graph, seed, inputs).items():
        place = plan.placements[t]
        mem.write(_ptr_of(place), value.reshape(-1), place.row_len, place.row_stride)
    steps = list(plan.steps)
    if order == "issue":
        for step in steps:
            if isinstance(step, Launch):
                run_launch(mem, step)
    else:
        queues: dict[int, list[Any]] = {}
        for step in steps:
            queues.setdefault(step.stream, []).append(step)
        heads = {s: 0 for s in queues}
        fired: set[int] = set()
        rng = random.Random(interleave_seed)
        while True:
            ready = []
            for s, q in queues.items():
                if heads[s] < len(q):
                    step = q[heads[s]]
                    if not isinstance(step, Wait) or step.event in fired:
                        ready.append(s)
            if not ready:
                stuck = [s for s, q in queues.items() if heads[s] < len(q)]
                if stuck:
                    raise ScheduleError(f"emulation deadlocked: streams {stuck} wait on events "
                                        f"that are never recorded")
                break
            s = rng.choice(sorted(ready))
            step = queues[s][heads[s]]
            heads[s] += 1
            if isinstance(step, Record):
                fired.add(step.event)
            elif isinstance(step, Launch):
                run_launch(mem, step)
    wanted = list(tensors) if tensors is not None else list(graph.outputs)
    shape_of = shape_or_flat(graph)
    out = {}
    for t in wanted:
        place = plan.placements[t]
        n = math.prod(shape_of(t))
        if place.row_len == place.row_stride:
            flat = mem.read(_ptr_of(place), n)
        else:
            e = np.arange(n)
            idx = (e // place.row_len) * place.row_stride + e % place.row_len
            flat = mem.read(_ptr_of(place), int(idx[-1]) + 1 if n else 0)[idx]
        out[t] = flat.reshape(shape_of(t))
    return out


def emulate_schedule(schedule: Schedule, *, seed: int = 0,
                     inputs: Mapping[TensorId, Any] | None = None, memory: str = "somas",
                     device: str = "h100") -> dict[TensorId, Array]:
    """The graph outputs of ``schedule``: its launch plan (:func:`build_launch_plan`) run on the
    NumPy device in issue order (the ``"emulator"`` output runner of ``workbench.execute``)."""
    from workbench.executors.gpu.launch_plan import build_launch_plan

    return emulate(build_launch_plan(schedule, memory=memory, device=device), inputs, seed=seed)


def _ptr_of(place: Any) -> Any:
    return Ptr(place.space, place.offset)


__all__ = [
    "TWINS", "Args", "Memory", "Twin", "emulate", "emulate_schedule", "eval_stmts", "run_launch",
]
