"""IOS's stage cost oracle: the workbench simulator, with latencies shared between identical stages.

IOS times every candidate stage on the GPU (notes ios.md §4.1) and spends almost all of its search
time doing so; here the simulator plays the GPU.  Repeated blocks (3 × InceptionA, 4 × InceptionC,
NASNet's normal cells) hold many stages that differ only in their op ids, so the latency is cached
under a *structural signature* of the stage: per op everything the simulator can see except its id
and tensor names (kind, device, flops, bytes, launch shape, pinned duration, workspace, attributes,
the sizes, shapes, dtypes and roles of its tensors), which in-stage op produces each input, and
the grouping into streams.  Two stages with equal signatures are the same simulation, so they get
the same latency; a stage is simulated once.  The cache is a plain dict, cleared when it reaches
``max_entries`` (memory stays bounded on any graph).

>>> import workbench as wb
>>> g = wb.models.inception_v3(batch=1, fused=True)
>>> oracle = StageOracle(g, device="h100")
>>> a = oracle([["Mixed_6b/branch1x1/conv"], ["Mixed_6b/branch7x7_1/conv"]])
>>> b = oracle([["Mixed_6c/branch1x1/conv"], ["Mixed_6c/branch7x7_1/conv"]])  # c7: 128 vs 160
>>> c = oracle([["Mixed_6d/branch1x1/conv"], ["Mixed_6d/branch7x7_1/conv"]])  # = Mixed_6c
>>> (oracle.simulated, oracle.reused) == (2, 1) and b == c
True
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from workbench.simulator.cost_model.costs import get_device
from workbench.values.graph import Graph, Op, OpId
from workbench.values.schedule import Schedule

MAX_ENTRIES = 200_000


class StageOracle:
    """``oracle(groups) -> µs``: the simulated latency of one stage run alone, group ``j`` on
    stream ``j``, issued group by group (IOS's runtime order).

    Groups of a stage are independent, so the stage needs no syncs; it is simulated with
    :func:`workbench.simulator.simulate.simulate_makespan` as a partial schedule of the whole graph.
     With
    ``sync="device_sync"`` (IOS's runtime, eager mode) a stage of several groups also pays the
    ``cudaDeviceSynchronize`` that ends it (``device_sync_us``), as IOS's own profiler measures
    multi-group stages with a synchronisation after each run (notes ios.md §4.1).
    ``simulated`` counts simulator runs, ``reused`` the stages answered from the signature cache.
    """

    def __init__(self, graph: Graph, *, device: str = "h100", mode: str = "eager",
                 calibration: Mapping[str, float] | None = None,
                 max_entries: int = MAX_ENTRIES, sync: str = "device_sync") -> None:
        from workbench.simulator.cost_model.calibration import check_calibration

        # checked (and frozen) once: each stage then finds its cost table kept on the graph
        self.graph, self.mode = graph, mode
        self.calibration = check_calibration(calibration, graph.op_ids)
        self.spec = get_device(device)
        self.sync_us = self.spec.device_sync_us if sync == "device_sync" and mode == "eager" \
            else 0.0
        self.max_entries = max_entries
        self.cache: dict[Hashable, float] = {}
        self.simulated = self.reused = 0
        self._op_sig: dict[OpId, int] = {}
        self._group_sig: dict[tuple[OpId, ...], int] = {}
        self._interned: dict[Hashable, int] = {}

    def __call__(self, groups: Sequence[Sequence[OpId]]) -> float:
        key = self.signature(groups)
        hit = self.cache.get(key)
        if hit is not None:
            self.reused += 1
            return hit
        from workbench.simulator.simulate import simulate_makespan

        streams = {j: tuple(g) for j, g in enumerate(groups)}
        order = tuple(op for g in groups for op in g)
        stage = Schedule(self.graph, "stage", streams, (), order)
        value = float(simulate_makespan(stage, self.spec, mode=self.mode,
                                        calibration=self.calibration))
        if len(groups) > 1:
            value += self.sync_us
        if len(self.cache) >= self.max_entries:
            self.cache.clear()
        self.cache[key] = value
        self.simulated += 1
        return value

    def signature(self, groups: Sequence[Sequence[OpId]]) -> Hashable:
        """The stage's structure without op ids: per group, per op ``(op signature, in-group
        producer position of each input or -1)``.  Groups of a stage share no edges, so the
        stage's signature is its groups' signatures in issue order."""
        return tuple(self._group_signature(tuple(g)) for g in groups)

    def _group_signature(self, group: tuple[OpId, ...]) -> int:
        sig = self._group_sig.get(group)
        if sig is None:
            graph = self.graph
            position: dict[str, int] = {}
            items = []
            for k, op_id in enumerate(group):
                op = graph.op(op_id)
                items.append((self._op_signature(op),
                              tuple(position.get(t, -1) for t in op.inputs)))
                for t in op.outputs:
                    position[t] = k
            sig = self._interned.setdefault(("group", tuple(items)), len(self._interned))
            if len(self._group_sig) >= self.max_entries:
                self._group_sig.clear()
            self._group_sig[group] = sig
        return sig

    def _op_signature(self, op: Op) -> int:
        sig = self._op_sig.get(op.id)
        if sig is None:
            tensors = self.graph.tensors

            def shape_of(t: str) -> tuple[Any, ...]:
                x = tensors.get(t)
                return ("?",) if x is None else (x.size_bytes, tuple(x.shape), x.dtype, x.role)

            key = (op.kind, op.device, op.flops, op.bytes_read, op.bytes_written,
                   op.thread_blocks, op.duration_us, op.workspace_bytes,
                   repr(sorted(op.attrs.items(), key=lambda kv: str(kv[0]))),
                   tuple(shape_of(t) for t in op.inputs), tuple(shape_of(t) for t in op.outputs))
            sig = self._interned.setdefault(key, len(self._interned))
            self._op_sig[op.id] = sig
        return sig
