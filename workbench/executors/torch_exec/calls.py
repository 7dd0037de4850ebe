"""The evaluator of a graph imported from a PyTorch module: every op is the model's own call.

A graph from :func:`workbench.io.from_torch` carries its traced module
(:class:`workbench.io.torch.program.TorchProgram`).  :class:`CallEvaluator` runs a schedule's
ops as those calls, with the module's own parameters and the caller's inputs, on whatever stream
the issue loop has made current (:mod:`workbench.executors.torch_exec.cuda`), so the outputs are
the model's.  fx nodes the schedule does not launch (Python values such as ``x.size(0)``, views a
pass dropped) are computed when an op first needs them, on that op's stream; a scheduled op whose
input is not computed yet is a :class:`ScheduleError` (the order violates a dependency), never a
silent recomputation.  A ``fused`` op (O1 fusion) runs its members' calls in order.

**Memory across streams.**  A value is released as soon as the last fx node that reads it has
run (graph outputs, inputs and parameters are kept), as the model's own ``forward`` frees it.  A
block freed that way returns to the caching allocator's pool of the stream that allocated it,
which may hand it out again while another stream still reads it; so every read of a tensor on a
stream other than the one its storage was allocated on is recorded with
``Tensor.record_stream`` (:meth:`workbench.executors.torch_exec.cuda.Streams.record_use`): the
allocator then reuses the block only after that stream's work up to the read is done.  (During a
CUDA-graph capture the allocator defers such blocks until the capture ends.)
``tests/test_torch_cuda_fake.py`` checks the recorded uses against a log of frees.

**Runs after the first.**  On the CPU the first complete run is recorded (which fx nodes each
op computes, what is freed after each) and later runs replay it with each call compiled once into
a closure (:mod:`workbench.executors.torch_exec.replay`): the model's calls on the same values,
freed at the same points, without the per-call lookups.

Complexity: one call per fx node; O(arguments) bookkeeping each in a general run, one closure
call and the recorded frees in a replay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from workbench.errors import OptionError, ScheduleError
from workbench.executors.torch_exec.replay import Plan, Recording, Step, run_steps
from workbench.executors.torch_exec.thunks import compile_call
from workbench.io.torch.program import TorchProgram
from workbench.ops.generic import FUSED
from workbench.values.graph import Graph, TensorId


def _tensors(value: Any) -> list[Any]:
    """The tensors inside a value (a tensor, or nested lists / tuples / dicts of them)."""
    if hasattr(value, "untyped_storage"):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _storage(t: Any) -> int:
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # sparse or meta tensors have no storage
        return 0


class CallEvaluator:
    """Runs the ops of ``graph`` as the calls of its :class:`TorchProgram`, one
    :meth:`run_op` per op; :meth:`start` begins a fresh run from ``inputs`` (placeholder name ->
    tensor, already on the device).  ``module``: the traced module on the run's device
    (:meth:`TorchProgram.module_on`); ``device``: that device (tensors the model creates, such
    as ``arange``'s, are made there; ``None``: where the trace made them).  ``streams``: the
    issue loop's :class:`~workbench.executors.torch_exec.cuda.Streams` on CUDA (``None`` on the
    CPU), which tells the current stream and records cross-stream uses.
    ``on_release(name, value)`` is called when a value is dropped (the tests log it)."""

    def __init__(self, graph: Graph, program: TorchProgram, inputs: Mapping[str, Any], *,
                 module: Any, device: Any = None) -> None:
        self.graph = graph
        self.program = program
        self.module = module
        self.device = device
        self.inputs = dict(inputs)
        missing = [n for n in program.input_names if n not in self.inputs]
        if missing:
            raise OptionError(f"torch executor: no value for input {missing[0]!r} of "
                              f"{program.name} (pass inputs=...)")
        self.scheduled = frozenset(graph.op_ids)
        self.members: dict[str, list[str]] = {
            op.id: [str(e["op"]) for e in op.attrs.get("expr", ())] for op in graph.ops
            if op.kind == FUSED and op.id not in program.nodes}
        #: the fx nodes each node reads (once per run of it: computed here, not per call)
        self.args = {name: program.args_of(name) for name in program.nodes}
        self.keep = frozenset({n for n, node in program.nodes.items()
                               if node.op in ("placeholder", "get_attr")}
                              | set(self.args[program.output_node.name]))
        self.readers: dict[str, int] = {}
        for args in self.args.values():
            for arg in args:
                self.readers[arg] = self.readers.get(arg, 0) + 1
        self.streams: Any = None
        self.on_release: Callable[[str, Any], None] | None = None
        self.env: dict[str, Any] = {}
        self.left: dict[str, int] = {}
        self.allocated_on: dict[int, Any] = {}
        #: the recorded run the CPU replays (see :meth:`run_op`); ``None``: none yet
        self.plan: Plan | None = None
        self._replay: Plan | None = None
        self._pos = 0
        self._failed = False
        self._log: Recording | None = None
        self._steps: list[tuple[str, list[str]]] | None = None
        self.start()

    def start(self) -> None:
        """Begin a run: on the CPU, a replay of the recorded plan when there is one, else a
        general run (which records one on the CPU)."""
        self.env = dict(self.inputs)
        self.allocated_on = {}
        self._pos = 0
        self._failed = False
        self._log = None
        if self.plan is not None and self.streams is None:
            self._replay = self.plan  # no reader counts are kept: see _leave_replay
            return
        self._replay = None
        self.left = dict(self.readers)
        if self.streams is None:
            self._log = []

    # ------------------------------------------------------------------------ running
    def run_op(self, op_id: str) -> None:
        """Run op ``op_id`` (its call, or a fused op's member calls) on the current stream.

        On the CPU the first complete run is recorded and later runs replay it
        (:mod:`~workbench.executors.torch_exec.replay`) while the ops come in the recorded
        order; an op out of that order ends the replay (:meth:`_leave_replay`: the plan is
        dropped and the next run records anew) and the general path checks it as always."""
        plan = self._replay
        if plan is not None:
            pos = self._pos
            if pos < len(plan.ops) and plan.ops[pos] == op_id:
                self._pos = pos + 1
                self._replaying(plan.steps[pos])
                return
            self._leave_replay(plan, pos)
        if self._failed:
            raise ScheduleError("torch executor: an op failed in this run; start a new run")
        log = self._log
        if log is None:
            self._run_op(op_id)
            return
        self._steps = []
        try:
            self._run_op(op_id)
        except BaseException:
            self._log = None  # a failed run records nothing
            raise
        finally:
            steps, self._steps = self._steps, None
        log.append((op_id, steps))
        if len(log) == len(self.scheduled):
            self._freeze(log)

    def run_ops(self, op_ids: tuple[str, ...]) -> None:
        """:meth:`run_op` for each op of ``op_ids`` in turn; a replay of the whole recorded
        run in one loop when they are its ops in its order."""
        plan = self._replay
        if plan is not None and self._pos == 0 and op_ids == plan.ops:
            self._pos = len(op_ids)
            self._replaying(plan.flat)
            return
        for op_id in op_ids:
            self.run_op(op_id)

    def _replaying(self, steps: tuple[Step, ...]) -> None:
        try:
            run_steps(steps, self.env, self.on_release)
        except BaseException:
            self._replay, self._failed = None, True  # the run cannot go on
            raise

    def _freeze(self, log: Recording) -> None:
        """The recorded run as the plan later runs replay (thunks compiled once per node)."""
        self._log = None
        nodes = self.program.nodes
        try:
            self.plan = Plan.of(log, lambda name: compile_call(nodes[name], self.module,
                                                               self.device))
        except (ValueError, TypeError, AttributeError):
            self.plan = None  # a node the compiler does not know: runs stay general

    def _leave_replay(self, plan: Plan, pos: int) -> None:
        """The run leaves the recorded order before op ``pos`` of ``plan``: rebuild the
        reader counts of what ran, drop the plan (the next run records anew) and go on in
        general."""
        self.left = plan.reader_counts(self.readers, self.args, pos)
        self._replay = self.plan = None

    def _run_op(self, op_id: str) -> None:
        if op_id in self.program.nodes:
            if op_id in self.env:
                raise ScheduleError(f"torch executor: op {op_id!r} runs twice in one run")
            self._call(op_id)
        elif op_id in self.members:
            for member in self.members[op_id]:
                self._call(member)
        else:
            op = self.graph.op(op_id)
            raise OptionError(f"torch executor: op {op_id!r} ({op.kind}) is no call of "
                              f"{self.program.name}'s program (made by a pass that rewrote "
                              f"the graph?)")

    def _value(self, name: str) -> Any:
        """The value of fx node ``name``: computed, a parameter, or host work done now."""
        if name in self.env:
            return self.env[name]
        node = self.program.nodes[name]
        if node.op == "get_attr":
            self.env[name] = self.program.call(self.module, name, self._value, self.device)
            self._logged(name)
        elif name in self.scheduled:
            raise ScheduleError(f"torch executor: an op reads {name!r} before it is computed "
                                f"(the order violates a dependency)")
        elif node.op == "placeholder":
            raise OptionError(f"torch executor: no value for input {name!r}")
        else:
            self._call(name)
        return self.env[name]

    def _call(self, name: str) -> None:
        args = self.args[name]
        stream = self.streams.current if self.streams is not None else None
        arg_values = [(a, self._value(a)) for a in args]
        if stream is not None:
            self._record_uses(arg_values, stream)
        value = self.program.call(self.module, name, self._value, self.device)
        self.env[name] = value
        frees = self._logged(name)
        if stream is not None:
            seen = {_storage(t) for _, v in arg_values for t in _tensors(v)}
            for t in _tensors(value):
                ptr = _storage(t)
                if ptr and ptr not in seen:
                    self.allocated_on[ptr] = stream
        for a in args:
            self.left[a] -= 1
            self._release_if_done(a, frees)
        self._release_if_done(name, frees)  # a value nobody reads goes at once

    def _logged(self, name: str) -> list[str] | None:
        """Record that node ``name`` was computed (in a recording run): the list its frees go
        in.  A value computed outside an op (``result`` mid-run) ends the recording."""
        if self._log is None:
            return None
        if self._steps is None:
            self._log = None
            return None
        frees: list[str] = []
        self._steps.append((name, frees))
        return frees

    def _release_if_done(self, name: str, frees: list[str] | None = None) -> None:
        """Drop ``name``'s value once every node that reads it has run (inputs, parameters and
        the model's outputs stay); a recording run notes it in ``frees``."""
        if self.left.get(name, 0) == 0 and name not in self.keep and name in self.env:
            dropped = self.env.pop(name)
            if frees is not None:
                frees.append(name)
            if self.on_release is not None:
                self.on_release(name, dropped)

    def _record_uses(self, arg_values: list[tuple[str, Any]], stream: Any) -> None:
        """Record the reads on ``stream`` of tensors allocated on other streams."""
        for _, v in arg_values:
            for t in _tensors(v):
                home = self.allocated_on.get(_storage(t))
                if home is not None and home != stream:
                    self.streams.record_use(t, stream)

    # ------------------------------------------------------------------------ results
    def outputs(self) -> dict[TensorId, Any]:
        """The graph outputs of the last run, as tensors (by graph tensor id)."""
        out = {}
        for t in self.graph.outputs:
            name = self.program.tensor_nodes.get(t, t)
            if name not in self.env:
                raise ScheduleError(f"torch executor: output {t!r} was not computed")
            out[t] = self.env[name]
        return out

    def result(self) -> Any:
        """What the model returns (its own nesting) for the last run."""
        return self.program.result_of(self._value)

    def live_tensors(self) -> list[Any]:
        return [t for v in self.env.values() for t in _tensors(v)]


__all__ = ["CallEvaluator"]
