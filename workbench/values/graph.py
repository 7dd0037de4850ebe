"""The computation graph: ops, tensors, data and control edges, and the checks that guard them.

A :class:`Graph` is an immutable value.  Ops are kept in *program order* (the order the user wrote
them); that order is what ``serial`` runs and what every tie-break in the schedulers falls back to.
Data edges are derived from tensors (``b`` consumes a tensor that ``a`` produces); control edges are
extra "must run after" edges that passes add (side effects).  Construction checks the graph and
raises a one-line :class:`~workbench.errors.GraphError` naming the offending op or tensor.

Internally every op also has an integer index (its program position) and adjacency lists over those
indices, so the schedulers run in O(V + E) on graphs with 100k ops.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from workbench._checks import show
from workbench.errors import GraphError
from workbench.ops import CONTROL_KINDS as CONTROL_KINDS  # re-exported
from workbench.ops import NO_TASK_KINDS as NO_TASK_KINDS  # re-exported
from workbench.values.attr_checks import check_graph_attrs
from workbench.values.control_checks import check_control_op, control_output_bytes, same_control
from workbench.values.graph_items import DEFAULT_TENSOR_BYTES as DEFAULT_TENSOR_BYTES
from workbench.values.graph_items import MAX_FIGURE as MAX_FIGURE
from workbench.values.graph_items import OP_DEVICES as OP_DEVICES
from workbench.values.graph_items import Op as Op
from workbench.values.graph_items import OpId as OpId
from workbench.values.graph_items import Tensor as Tensor
from workbench.values.graph_items import TensorId as TensorId
from workbench.values.graph_items import (
    _check_number,
    _known_device,
    _show,
    check_figures,
    control_depth,
    ops_from_edges,
    plain_figure,
)
from workbench.values.graph_items import priority_topological_order as priority_topological_order
from workbench.values.program import ModelProgram, program_of, token_of


class Graph:
    """An immutable DAG of :class:`Op` s and :class:`Tensor` s.

    Parameters
    ----------
    ops:
        The ops in program order.
    tensors:
        Every tensor the ops produce or consume.  A tensor that an op lists as an output but that is
        missing here is created with size 0; a tensor that an op reads must be produced by an op or
        be given here with ``producer=None`` (a graph input or parameter).
    control_edges:
        Extra ``(before, after)`` ordering edges between op ids.
    outputs:
        Graph output tensors; default: every produced tensor that no op consumes.
    program:
        What it takes to run the model the graph was imported from, with its own weights (a
        :class:`~workbench.values.program.ModelProgram`: the traced PyTorch calls and parameters
        of :func:`workbench.io.from_torch`, the initializers of an ONNX file), or ``None``.  An
        attachment, not part of the value: :meth:`replace` and the passes built on it keep it,
        equality ignores it, ``save`` drops it, and pickling keeps it only within the process
        that imported it and its forked workers (see :meth:`__getstate__`).

    Examples
    --------
    >>> g = Graph.from_edges([("n1", "n2"), ("n1", "n3"), ("n2", "n4"), ("n3", "n4")])
    >>> g.op_ids
    ('n1', 'n2', 'n3', 'n4')
    >>> g.successors("n1")
    ('n2', 'n3')
    """

    __slots__ = (
        "name", "_ops", "_tensors", "_control", "_outputs", "_index", "_succ", "_pred",
        "_data_pred", "_consumers", "_topo", "_cache", "program",
    )

    def __init__(
        self,
        ops: Iterable[Op],
        tensors: Iterable[Tensor] = (),
        control_edges: Iterable[tuple[OpId, OpId]] = (),
        *,
        outputs: Iterable[TensorId] | None = None,
        name: str = "graph",
        program: ModelProgram | None = None,
    ) -> None:
        self.name = str(name)
        self.program = program
        self._ops: tuple[Op, ...] = tuple(_known_device(op) for op in ops)
        self._cache: dict[str, Any] = {}
        self._index: dict[OpId, int] = {}
        control = False
        for i, op in enumerate(self._ops):
            if not isinstance(op, Op):
                raise GraphError(f"op #{i} is a {type(op).__name__}, not an Op")
            if op.kind in CONTROL_KINDS:
                control = True
            if not isinstance(op.id, str) or not op.id:
                raise GraphError(f"op #{i} has an empty or non-string id {show(op.id)}")
            if op.id in self._index:
                raise GraphError(f"duplicate op id {show(op.id)} (ops #{self._index[op.id]} "
                                 f"and #{i})")
            self._index[op.id] = i
            check_figures(op)
            if op.thread_blocks is not None and (
                isinstance(op.thread_blocks, bool) or not isinstance(op.thread_blocks, int)
                or op.thread_blocks < 1 or op.thread_blocks > 2**62
            ):
                raise GraphError(f"op {show(op.id)}: thread_blocks must be a positive integer "
                                 f"of at most 2**62, got {show(op.thread_blocks)}")
        self._tensors = self._collect_tensors(tensors)
        check_graph_attrs(self._ops, self._tensors)  # the one check of op attributes
        self._control = tuple(self._check_control(control_edges))
        self._build_adjacency()
        produced_unused = [t for t in self._tensors.values()
                           if t.producer is not None and not self._consumers[t.id]]
        if outputs is None:
            self._outputs = tuple(t.id for t in produced_unused)
        else:
            self._outputs = tuple(outputs)
            for t in self._outputs:
                if t not in self._tensors:
                    raise GraphError(f"graph output {show(t)} is not a tensor of the graph")
        self._topo = self._check_acyclic()
        self._cache["control_flow"] = control
        if control:  # checks each control-flow op, and how deep they nest
            self._cache["control_depth"] = control_depth(
                self._ops, lambda op: check_control_op(op, self._tensors, Graph))

    # ----------------------------------------------------------------------------- construction
    def _collect_tensors(self, tensors: Iterable[Tensor]) -> dict[TensorId, Tensor]:
        table: dict[TensorId, Tensor] = {}
        for t in tensors:
            if not isinstance(t, Tensor):
                raise GraphError(f"tensor entry {show(t)} is not a Tensor")
            if t.id in table:
                raise GraphError(f"duplicate tensor id {show(t.id)}")
            if not plain_figure(t.size_bytes):
                _check_number(t.size_bytes, f"tensor {show(t.id)}: size_bytes")
            if t.producer is not None and t.producer not in self._index:
                raise GraphError(f"tensor {show(t.id)} names producer {show(t.producer)}, "
                                 f"which is not an op")
            table[t.id] = t
        produced_by: dict[TensorId, OpId] = {}
        for op in self._ops:
            for out in op.outputs:
                if out in produced_by:
                    raise GraphError(f"tensor {show(out)} is produced by both "
                                     f"{show(produced_by[out])} and {show(op.id)}")
                produced_by[out] = op.id
                known = table.get(out)
                if known is None:
                    table[out] = Tensor(out, control_output_bytes(op, out), producer=op.id)
                elif known.producer is None:
                    if known.role in ("input", "parameter"):
                        raise GraphError(f"tensor {show(out)} is a graph {known.role} but op "
                                         f"{show(op.id)} also produces it")
                    table[out] = replace(known, producer=op.id)
                elif known.producer != op.id:
                    raise GraphError(f"tensor {show(out)} is produced by both "
                                     f"{show(known.producer)} and {show(op.id)}")
        for t in table.values():
            if t.producer is not None and produced_by.get(t.id) != t.producer:
                raise GraphError(f"tensor {show(t.id)} names producer {show(t.producer)}, "
                                 f"which does not list it among its outputs")
        for op in self._ops:
            for inp in op.inputs:
                if inp not in table:
                    raise GraphError(f"op {show(op.id)} reads tensor {show(inp)}, which no op "
                                     f"produces and which is not a graph input (dangling edge)")
        return table

    def _check_control(self, edges: Iterable[tuple[OpId, OpId]]) -> list[tuple[OpId, OpId]]:
        out = []
        for edge in edges:
            try:
                a, b = edge
            except (TypeError, ValueError):
                raise GraphError(f"control edge {show(edge)} is not a (before, after) "
                                 f"pair") from None
            for end in (a, b):
                if end not in self._index:
                    raise GraphError(f"control edge {show(a)} -> {show(b)} names unknown op "
                                     f"{show(end)} (dangling edge)")
            if a == b:
                raise GraphError(f"cycle: {a} -> {a} (control edge onto itself)")
            out.append((a, b))
        return out

    def _build_adjacency(self) -> None:
        n = len(self._ops)
        producer_index = {t.id: self._index[t.producer] for t in self._tensors.values()
                          if t.producer is not None}
        consumers: dict[TensorId, list[OpId]] = {tid: [] for tid in self._tensors}
        succ: list[list[int]] = [[] for _ in range(n)]
        pred: list[list[int]] = [[] for _ in range(n)]
        data_pred: list[list[int]] = [[] for _ in range(n)]
        for j, op in enumerate(self._ops):
            seen_pred: set[int] = set()
            for tid in dict.fromkeys(op.inputs):  # an op reading a tensor twice consumes it once
                consumers[tid].append(op.id)
                i = producer_index.get(tid)
                if i is None:
                    continue
                if i == j:
                    raise GraphError(f"cycle: {show(op.id)} -> {show(op.id)} (op reads its own "
                                     f"output {show(tid)})")
                if i not in seen_pred:
                    seen_pred.add(i)
                    data_pred[j].append(i)
                    pred[j].append(i)
        pred_sets: dict[int, set[int]] = {}  # only for the targets of control edges
        for a, b in self._control:
            i, j = self._index[a], self._index[b]
            known = pred_sets.get(j)
            if known is None:
                known = pred_sets[j] = set(pred[j])
            if i not in known:
                known.add(i)
                pred[j].append(i)
        for j in range(n):
            for i in pred[j]:
                succ[i].append(j)
        for lst in succ:
            lst.sort()  # successors in program order: the documented tie-break everywhere
        self._succ, self._pred, self._data_pred = succ, pred, data_pred
        self._consumers = {k: tuple(v) for k, v in consumers.items()}

    def _check_acyclic(self) -> tuple[int, ...]:
        """Kahn's algorithm, smallest program index first; O((V + E) log V).  Names a cycle if
        there is one."""
        n = len(self._ops)
        if all(i < j for j in range(n) for i in self._pred[j]):
            return tuple(range(n))  # program order is already topological (the common case)
        indeg = [len(p) for p in self._pred]
        heap = [i for i in range(n) if indeg[i] == 0]
        heapq.heapify(heap)
        order: list[int] = []
        while heap:
            i = heapq.heappop(heap)
            order.append(i)
            for j in self._succ[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(heap, j)
        if len(order) < n:
            raise GraphError(f"cycle: {self._describe_cycle(set(range(n)) - set(order))}")
        return tuple(order)

    def _describe_cycle(self, stuck: set[int]) -> str:
        import networkx as nx

        sub = nx.DiGraph((i, j) for j in stuck for i in self._pred[j] if i in stuck)
        cycle = nx.find_cycle(sub)
        names = [_show(self._ops[a].id) for a, _ in cycle] + [_show(self._ops[cycle[0][0]].id)]
        return " -> ".join(names)

    # ----------------------------------------------------------------------------- builders
    @classmethod
    def from_edges(
        cls,
        edges: Iterable[tuple[OpId, OpId]],
        ops: Mapping[OpId, str] | Sequence[OpId] | None = None,
        *,
        sizes: Mapping[OpId, int] | None = None,
        durations: Mapping[OpId, float] | None = None,
        thread_blocks: Mapping[OpId, int] | None = None,
        devices: Mapping[OpId, str] | None = None,
        name: str = "graph",
    ) -> Graph:
        """Build a graph from ``(producer, consumer)`` pairs.

        Each op produces one output tensor ``"<op>:out"`` (``sizes[op]`` bytes, default 1 MiB) and
        reads the outputs of its predecessors in edge order.  ``ops`` gives op types (a mapping) or
        just ids; its order, else the first appearance in ``edges``, is the program order.
        Ops default to ``duration_us=10`` unless ``durations`` says otherwise.  O(V + E).
        """
        op_list, tensors = ops_from_edges(edges, ops, sizes or {}, durations or {},
                                          thread_blocks or {}, devices or {})
        return cls(op_list, tensors, name=name)

    def replace(self, *, ops: Iterable[Op] | None = None, tensors: Iterable[Tensor] | None = None,
                control_edges: Iterable[tuple[OpId, OpId]] | None = None,
                outputs: Iterable[TensorId] | None = None, name: str | None = None) -> Graph:
        """A new graph with some parts replaced (the others are kept)."""
        return Graph(
            self._ops if ops is None else ops,
            self._tensors.values() if tensors is None else tensors,
            self._control if control_edges is None else control_edges,
            outputs=self._outputs if outputs is None and ops is None else outputs,
            name=self.name if name is None else name,
            program=self.program,
        )

    def subgraph(self, op_ids: Iterable[OpId], *, name: str | None = None) -> Graph:
        """The ops ``op_ids`` (kept in program order) with the tensors they touch; tensors produced
        outside become graph inputs, control edges between kept ops are kept.  O(V + E)."""
        keep = set(op_ids)
        for op_id in keep:
            self.index(op_id)
        ops = [op for op in self._ops if op.id in keep]
        tensors = {}
        for op in ops:
            for tid in (*op.inputs, *op.outputs):
                t = self._tensors[tid]
                if t.producer is not None and t.producer not in keep:
                    t = replace(t, producer=None, role="input")
                tensors[tid] = t
        control = [(a, b) for a, b in self._control if a in keep and b in keep]
        return Graph(ops, tensors.values(), control, name=name or f"{self.name}[sub]")

    def with_op(self, op_id: OpId, **changes: Any) -> Graph:
        """A copy with one op's fields changed (``dataclasses.replace`` on that op)."""
        return self.replace(ops=[replace(o, **changes) if o.id == op_id else o for o in self._ops])

    # ----------------------------------------------------------------------------- queries
    @property
    def ops(self) -> tuple[Op, ...]:
        return self._ops

    @property
    def op_ids(self) -> tuple[OpId, ...]:
        return tuple(op.id for op in self._ops)

    @property
    def tensors(self) -> Mapping[TensorId, Tensor]:
        """A read-only view of the tensor table (O(1))."""
        return MappingProxyType(self._tensors)

    @property
    def outputs(self) -> tuple[TensorId, ...]:
        return self._outputs

    @property
    def control_edges(self) -> tuple[tuple[OpId, OpId], ...]:
        return self._control

    def __len__(self) -> int:
        return len(self._ops)

    def __contains__(self, op_id: object) -> bool:
        return op_id in self._index

    def op(self, op_id: OpId) -> Op:
        try:
            return self._ops[self._index[op_id]]
        except KeyError:
            raise GraphError(f"unknown op {show(op_id)} in graph {show(self.name)}") from None

    def tensor(self, tensor_id: TensorId) -> Tensor:
        try:
            return self._tensors[tensor_id]
        except KeyError:
            raise GraphError(f"unknown tensor {show(tensor_id)} in graph "
                             f"{show(self.name)}") from None

    def index(self, op_id: OpId) -> int:
        """Program position of an op."""
        try:
            return self._index[op_id]
        except KeyError:
            raise GraphError(f"unknown op {show(op_id)} in graph {show(self.name)}") from None

    def successors(self, op_id: OpId) -> tuple[OpId, ...]:
        return tuple(self._ops[j].id for j in self._succ[self.index(op_id)])

    def predecessors(self, op_id: OpId) -> tuple[OpId, ...]:
        """Data predecessors in argument order, then control predecessors."""
        return tuple(self._ops[i].id for i in self._pred[self.index(op_id)])

    def consumers(self, tensor_id: TensorId) -> tuple[OpId, ...]:
        return self._consumers[self.tensor(tensor_id).id]

    @property
    def edges(self) -> tuple[tuple[OpId, OpId], ...]:
        """All dependency edges (data and control, deduplicated), by consumer program order."""
        ids = [op.id for op in self._ops]
        return tuple((ids[i], ids[j]) for j in range(len(ids)) for i in self._pred[j])

    @property
    def data_edges(self) -> tuple[tuple[OpId, OpId], ...]:
        ids = [op.id for op in self._ops]
        return tuple((ids[i], ids[j]) for j in range(len(ids)) for i in self._data_pred[j])

    def is_control_edge(self, a: OpId, b: OpId) -> bool:
        """True when ``a -> b`` exists only as a control edge."""
        i, j = self.index(a), self.index(b)
        only = self._cache.get("control_only")
        if only is None:  # built once: O(E) instead of a scan of j's predecessors per call
            data = {(p, k) for k in {self._index[y] for _, y in self._control}
                    for p in self._data_pred[k]}
            only = {(self._index[x], self._index[y]) for x, y in self._control} - data
            self._cache["control_only"] = only
        return (i, j) in only

    def topo_order(self) -> tuple[OpId, ...]:
        """The topological order that stays closest to program order (smallest index first)."""
        return tuple(self._ops[i].id for i in self._topo)

    @property
    def has_control_flow(self) -> bool:
        """Whether some op is a ``while`` or ``case_of`` holding sub-graphs (O(1))."""
        return bool(self._cache["control_flow"])

    def sources(self) -> tuple[OpId, ...]:
        return tuple(op.id for i, op in enumerate(self._ops) if not self._pred[i])

    def sinks(self) -> tuple[OpId, ...]:
        return tuple(op.id for i, op in enumerate(self._ops) if not self._succ[i])

    # integer views for algorithms (shared lists: callers must not mutate them)
    @property
    def succ_index(self) -> list[list[int]]:
        return self._succ

    @property
    def pred_index(self) -> list[list[int]]:
        return self._pred

    @property
    def topo_index(self) -> tuple[int, ...]:
        return self._topo

    def summary(self) -> dict[str, Any]:
        """Counts and totals for reports: ops, edges, tensors, flops, bytes, op types."""
        kinds: dict[str, int] = {}
        for op in self._ops:
            kinds[op.kind] = kinds.get(op.kind, 0) + 1
        return {
            "name": self.name,
            "ops": len(self._ops),
            "edges": sum(len(p) for p in self._pred),
            "control_edges": len(self._control),
            "tensors": len(self._tensors),
            "gflops": sum(op.flops for op in self._ops) / 1e9,
            "activation_mib": sum(t.size_bytes for t in self._tensors.values()
                                  if t.producer is not None) / 2**20,
            "devices": sorted({op.device for op in self._ops}),
            "op_kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        }

    def __repr__(self) -> str:
        return (f"Graph({self.name!r}, {len(self._ops)} ops, "
                f"{sum(len(p) for p in self._pred)} edges)")

    def _repr_html_(self) -> str:
        """Notebook display: summary and DAG as inline SVG (without ``dot``: built-in drawing)."""
        from workbench.values.views import view

        return view("graph_html")(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return (self._ops == other._ops and self._tensors == other._tensors
                and self._control == other._control and self._outputs == other._outputs
                and all(same_control(a, b) for a, b in zip(self._ops, other._ops)
                        if a.kind in CONTROL_KINDS))

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with a token of :attr:`program`, not the program (a model's calls and
        weights stay in the process that imported it): unpickled there, or in a worker it
        forked, the graph gets its program back; anywhere else it has none
        (:func:`workbench.values.program.program_of`)."""
        state = {k: getattr(self, k) for k in self.__slots__ if k != "program"}
        state["program"] = token_of(self.program)
        return state

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        for key, value in state.items():
            if key != "program":
                object.__setattr__(self, key, value)
        self.program = program_of(state.get("program"))

    # ----------------------------------------------------------------------------- networkx
    def to_networkx(self) -> Any:
        """A ``networkx.DiGraph``: node attributes are the op fields, edges carry ``kind``
        (``data``/``control``) and, for data edges, the tensors and their bytes."""
        from workbench.values.graph_nx import to_networkx

        return to_networkx(self.name, self._ops, self._tensors, self._control)

    @classmethod
    def from_networkx(cls, nxg: Any, *, name: str | None = None) -> Graph:
        """Build a graph from a ``networkx.DiGraph``; node attributes as in :meth:`to_networkx`
        (missing ones take defaults).  Edges with ``kind="control"`` become control edges."""
        from workbench.values.graph_nx import from_networkx

        ops, tensors, control, graph_name = from_networkx(nxg, name=name)
        return cls(ops, tensors, control, name=graph_name)
