"""The simulator's device: the discrete-event loop that runs kernels' phases on streams and shares
each resource pool between them (part of :mod:`workbench.simulator.simulate`).

:class:`Engine` keeps the event heap, readiness (stream order, syncs, barriers, host issue) and one
:class:`Pool` per resource pool (FIFO slot allocation, interference); :func:`fair_rates` shares
FLOP/s and DRAM bandwidth max-min fairly.  The module docstring of
:mod:`workbench.simulator.simulate`
states the model.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Any

from workbench.simulator.cost_model.costs import DeviceSpec, OpCost, is_exclusive_pool
from workbench.simulator.cost_model.kernel_model import GpuModel
from workbench.simulator.host import Host
from workbench.values.graph import Op
from workbench.values.schedule import Schedule


class Pool:
    """Kernels in their work phases on one device (or engine): FIFO slot allocation, fair sharing
    of FLOP/s and bandwidth, interference (module docstring)."""

    __slots__ = ("active", "interference", "prev_prefix", "queue", "running", "limit",
                 "exclusive")

    def __init__(self, interference: float, limit: int, exclusive: bool) -> None:
        # op index -> [remaining alone-µs, rate, last update, version, slots, compute, bw,
        #              1.0 when a completion event of this version is pending, arrival time,
        #              program position of the op (breaks ties between equal arrivals)]
        self.active: dict[int, list[float]] = {}
        self.interference = interference
        self.prev_prefix = 0
        self.queue: deque[int] = deque()  # ops waiting for admission
        self.running = 0                  # ops admitted (any segment)
        self.limit = limit
        self.exclusive = exclusive


_LAT, _WORK = 0, 1
_WAIT = -2  # heap version of a delayed unblock (a cross-stream event wait)


def hardware_queues(stream_of: list[Any], queues: int) -> list[int]:
    """The hardware work queue of each op: streams in sorted order of their ids go round-robin
    onto ``queues`` queues (``CUDA_DEVICE_MAX_CONNECTIONS``); ``queues <= 0``: one per stream.
    Ops sharing a queue run one after another in issue order (the queue serialises them).
    O(n + S log S) for n ops on S streams.

    >>> hardware_queues([0, 1, 2, 9, 0], 2)
    [0, 1, 0, 1, 0]
    """
    streams = list(dict.fromkeys(stream_of))
    try:
        streams.sort()
    except TypeError:  # mixed id types: first use
        pass
    rank = {s: k for k, s in enumerate(streams)}
    if queues <= 0:
        return [rank[s] for s in stream_of]
    return [rank[s] % queues for s in stream_of]


#: Per op of a run: its segments (:func:`op_segments`), its resource pool and its program position.
Prepared = tuple[list[list[tuple[int, float, float, float, float, int]]], list[str], list[float]]


def op_segments(costs: list[OpCost], op_gap_us: float
                ) -> list[list[tuple[int, float, float, float, float, int]]]:
    """Per op, the segments the engine runs in turn: ``(kind, duration, slots, compute,
    bandwidth, kernel index)``, a latency (``op_gap_us`` more for the first kernel) then the work
    phases of each kernel, and its cold-weight streaming when it has any.  O(kernel phases)."""
    table = []
    for c in costs:
        segs = []
        for k, kt in enumerate(c.kernels):
            segs.append((_LAT, kt.latency_us + (op_gap_us if k == 0 else 0.0), 0.0, 0.0, 0.0, k))
            for p in kt.phases:
                if p.alone_us > 0:
                    segs.append((_WORK, p.alone_us, max(p.slots, 1e-9), p.compute, p.bandwidth,
                                 k))
            if kt.cold_us > 0 and kt.phases:
                # streaming cold weights: the blocks keep their slots, the SMs idle
                segs.append((_WORK, kt.cold_us, max(kt.phases[-1].slots, 1e-9), 0.0, 0.0, k))
        table.append(segs)
    return table


class Engine:
    def __init__(self, schedule: Schedule, ops: list[Op], costs: list[OpCost],
                 stream_of: list[int], waits: list[list[int]], phase: list[int],
                 spec: DeviceSpec, mode: str, pipeline: str, model: GpuModel,
                 host: Any, prepared: Prepared) -> None:
        """``prepared``: :func:`op_segments`, :func:`~workbench.simulator.cost_model.costs.pool_of`
        and the program position of every op in ``ops`` (they depend on the op and its cost
        only, so :mod:`workbench.simulator.simulate` keeps them per graph)."""
        n = len(ops)
        self.n = n
        self.costs = costs
        self.start = [0.0] * n
        self.end = [0.0] * n
        self.host = host if host is not None else Host(schedule, ops, costs, waits, spec, mode,
                                                        pipeline)
        # segments per op: (kind, duration, slots, compute, bandwidth, kernel index)
        self.segments, pools, self.program = prepared
        self.seg = [0] * n
        self.version = [0.0] * n  # next version of an op's work entry (stale events differ)
        # readiness: issue + predecessor on the hardware queue + syncs + barrier gate
        self.blockers = [1] * n
        self.next_on_stream = [-1] * n   # the next op on the same hardware queue
        queue = hardware_queues(stream_of, model.hardware_queues)
        last: dict[int, int] = {}
        for i in range(n):
            q = queue[i]
            if q in last:
                self.next_on_stream[last[q]] = i
                self.blockers[i] += 1
            last[q] = i
        self.dependents: list[list[int]] = [[] for _ in range(n)]
        for b, ws in enumerate(waits):
            for a in ws:
                self.dependents[a].append(b)
            self.blockers[b] += len(ws)
        self.event_wait = model.event_wait_us
        self.stream_of = stream_of
        self.phase = phase
        self.phase_ops: dict[int, list[int]] = {}
        self.phase_left: dict[int, int] = {}
        for i, ph in enumerate(phase):
            self.phase_left[ph] = self.phase_left.get(ph, 0) + 1
            if ph > 0:
                self.phase_ops.setdefault(ph, []).append(i)
                self.blockers[i] += 1
        self.done_phase = -1
        self.last_phase = max(phase, default=0)
        self.pool_name = pools
        self.pools: dict[str, Pool] = {}
        for name in dict.fromkeys(pools):
            exclusive = is_exclusive_pool(name)
            self.pools[name] = Pool(spec.interference, 1 if exclusive else
                                     spec.max_concurrent_kernels, exclusive)
        self.heap: list[tuple[float, int, int, int]] = []  # (time, seq, op, version)
        self.seq = 0
        # pools whose sharing changed at this instant, in the order they changed (a dict, not a
        # set: a set's order follows the string hash, so ties would change with PYTHONHASHSEED)
        self.dirty: dict[str, None] = {}
        self.n_ended = 0
        self.sharing_work = 0
        self.issue_ptr = 0

    # ------------------------------------------------------------------ main loop
    def run(self) -> None:
        if getattr(self.host, "lazy", False):
            self._run_lazy()
            return
        n = self.n
        host = self.host
        host.advance(0)
        self._advance_phases()
        heap = self.heap
        issue = host.issue
        dirty = self.dirty
        pools = self.pools
        unblock, drain, reshare = self._unblock, self._drain_events, self._reshare
        inf = math.inf
        ptr = 0  # the next op to issue (the host issues in order)
        while self.n_ended < n:
            t = issue[ptr] if ptr < host.next else inf
            if heap and heap[0][0] < t:
                t = heap[0][0]
            if t == inf:
                raise RuntimeError("simulation stalled: the schedule deadlocks")  # validate()
            while ptr < host.next and issue[ptr] <= t:
                ptr += 1
                unblock(ptr - 1, t)
            if heap and heap[0][0] <= t:
                drain(t)
            if dirty:
                for name in list(dirty):
                    reshare(pools[name], t)
                dirty.clear()

    def _drain_events(self, t: float) -> None:
        """Take every device event due by ``t`` off the heap: a cross-stream wait that has
        elapsed unblocks its op; a segment completion ends the segment unless it is stale (the
        op's rate changed since, so a newer completion event stands for it).  Shared by the
        precomputed-host and the lazy-host loops."""
        heap, pop = self.heap, heapq.heappop
        pools, pool_name, segment_done = self.pools, self.pool_name, self._segment_done
        while heap and heap[0][0] <= t:
            _, _, i, version = pop(heap)
            if version == _WAIT:
                self._unblock(i, t)
                continue
            if version >= 0:
                entry = pools[pool_name[i]].active.get(i)
                if entry is None or int(entry[3]) != version:
                    continue  # stale completion: the rate changed since
            segment_done(i, t)

    def _run_lazy(self) -> None:
        """The main loop with a host that decides as it goes (control flow,
        :class:`workbench.control.host.ControlHost`): its next choice is a third kind of event,
        taken after the device events at the same time, and its issues come in ``sequence``."""
        n = self.n
        host: Any = self.host
        seq = host.sequence
        self._advance_phases()
        heap = self.heap
        while self.n_ended < n:
            t_issue = host.issue[seq[self.issue_ptr]] if self.issue_ptr < len(seq) else math.inf
            t_heap = heap[0][0] if heap else math.inf
            t = min(t_issue, t_heap, host.choice_at)
            if t == math.inf:
                raise RuntimeError("simulation stalled: the schedule deadlocks")  # validate()
            while self.issue_ptr < len(seq) and host.issue[seq[self.issue_ptr]] <= t:
                self._unblock(seq[self.issue_ptr], t)
                self.issue_ptr += 1
            self._drain_events(t)
            for name in list(self.dirty):
                self._reshare(self.pools[name], t)
            self.dirty.clear()
            if host.choice_at <= t:
                host.choose(t, self.n_ended)

    # ------------------------------------------------------------------ readiness
    def _unblock(self, i: int, t: float) -> None:
        self.blockers[i] -= 1
        if self.blockers[i] == 0:
            self._admit(i, t)

    def _admit(self, i: int, t: float) -> None:
        pool = self.pools[self.pool_name[i]]
        if pool.running >= pool.limit:
            pool.queue.append(i)
            return
        pool.running += 1
        self.start[i] = t
        self._begin_segment(i, t)

    def _begin_segment(self, i: int, t: float) -> None:
        segs = self.segments[i]
        k = self.seg[i]
        if k >= len(segs):
            self._op_done(i, t)
            return
        kind, duration, slots, compute, bw, kernel = segs[k]
        if kind == _LAT:
            begin = t
            if kernel > 0:  # a later kernel of the op starts only once the host launched it
                begin = max(t, self.host.issue[i] + kernel * self.host.kernel_gap[i])
            self.seq += 1
            heapq.heappush(self.heap, (begin + duration, self.seq, i, -1))
            return
        pool_name = self.pool_name[i]
        active = self.pools[pool_name].active
        entry = active.get(i)
        if entry is None:
            # versions go on from the op's previous kernel: its stale completion events must not
            # match this one's
            active[i] = [duration, 0.0, t, self.version[i], slots, compute, bw, 0.0, t,
                         self.program[i]]
        else:  # the next phase of the same kernel keeps its place in the FIFO order
            entry[0], entry[1], entry[2] = duration, 0.0, t
            entry[3] += 1.0
            entry[4], entry[5], entry[6], entry[7] = slots, compute, bw, 0.0
        self.dirty[pool_name] = None

    def _push(self, time: float, i: int, version: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, self.seq, i, version))

    def _segment_done(self, i: int, t: float) -> None:
        segs = self.segments[i]
        k = self.seg[i]
        kind = segs[k][0]
        nxt = k + 1
        if kind == _WORK:
            pool_name = self.pool_name[i]
            pool = self.pools[pool_name]
            same_kernel = nxt < len(segs) and segs[nxt][0] == _WORK
            if not same_kernel:
                self.version[i] = pool.active.pop(i)[3] + 1.0
            self.dirty[pool_name] = None
        self.seg[i] = nxt
        self._begin_segment(i, t)

    def _op_done(self, i: int, t: float) -> None:
        self.end[i] = t
        self.n_ended += 1
        pool = self.pools[self.pool_name[i]]
        pool.running -= 1
        if pool.queue:
            self._admit(pool.queue.popleft(), t)
        nxt = self.next_on_stream[i]
        if nxt >= 0:
            self._unblock(nxt, t)
        delay = self.event_wait
        for b in self.dependents[i]:
            if delay > 0.0 and self.stream_of[b] != self.stream_of[i]:
                self._push(t + delay, b, _WAIT)  # the event wait resolves on the device
            else:
                self._unblock(b, t)
        p = self.phase[i]
        self.phase_left[p] -= 1
        self._advance_phases(t)
        self.host.op_ended(i, t, self.n_ended)

    def _advance_phases(self, t: float = 0.0) -> None:
        while self.done_phase < self.last_phase and self.phase_left.get(self.done_phase + 1,
                                                                        0) == 0:
            self.done_phase += 1
            for j in self.phase_ops.get(self.done_phase + 1, ()):
                self._unblock(j, t)

    # ------------------------------------------------------------------ sharing
    def _reshare(self, pool: Pool, t: float) -> None:
        active = pool.active
        if not active:
            pool.prev_prefix = 0
            return
        if len(active) == 1:  # alone (two fifths of the passes in IOS's stage oracle): its cap
            ((i, e),) = active.items()
            got = e[4] if e[4] < 1.0 else 1.0
            pool.prev_prefix = 1
            self.sharing_work += 2  # what the general pass counts for one kernel
            self._set_rate(i, e, got / e[4], t)
            return
        free = 1.0
        chosen: list[tuple[int, list[float], float, float]] = []  # (op, entry, got, cap)
        zeroed: list[tuple[int, list[float]]] = []
        count = 0
        limit = max(pool.prev_prefix, 1)
        # Kernels that arrived at the same instant (consecutive in the FIFO order) are served in
        # program order: neither was first, and the order they happened to be issued in must not
        # decide it (in graph mode nothing orders them; the exact optimum relies on this).
        group: list[tuple[int, list[float]]] = []
        for i, e in active.items():
            if group and e[8] != group[0][1][8]:
                free = self._admit_group(group, free, chosen)
                group = []
            if free <= 1e-12:
                if count >= limit:
                    break
                if e[1] > 0.0:
                    zeroed.append((i, e))
            else:
                group.append((i, e))
            count += 1
        if group:
            self._admit_group(group, free, chosen)
        pool.prev_prefix = len(chosen)
        self.sharing_work += count + 1
        # fair_rates' first test, made here (the same sums in the same order): when everyone at
        # its cap fits, which is the common case, no demand list is built
        total_c = total_b = occupied = 0.0
        for _, e, got, cap in chosen:
            total_c += e[5] * cap
            total_b += e[6] * cap
            occupied += got
        if total_c <= 1.0 and total_b <= 1.0:
            rates = [c[3] for c in chosen]
        else:
            rates = fair_rates([(c[1][5], c[1][6], c[3]) for c in chosen])
        kappa = pool.interference
        for (i, e, got, _), rate in zip(chosen, rates, strict=True):
            if kappa and occupied > got:
                rate = rate / (1.0 + kappa * (occupied - got))
            self._set_rate(i, e, rate, t)
        for i, e in zeroed:
            self._set_rate(i, e, 0.0, t)

    @staticmethod
    def _admit_group(group: list[tuple[int, list[float]]], free: float,
                     chosen: list[tuple[int, list[float], float, float]]) -> float:
        """Give kernels that arrived together their slots, first come first served with ties
        in program order; returns the slots left."""
        if len(group) > 1:
            group.sort(key=lambda item: item[1][9])
        for i, e in group:
            got = e[4] if e[4] < free else free
            free -= got
            chosen.append((i, e, got, got / e[4]))
        return free

    def _set_rate(self, i: int, e: list[float], rate: float, t: float) -> None:
        """Give the phase of op ``i`` a new speed from ``t`` on, and (re)schedule its end."""
        old = e[1]
        if old == rate and (rate == 0.0 or e[7] == 1.0):
            return  # unchanged: its pending completion event stays valid
        if old > 0.0:
            e[0] = max(0.0, e[0] - old * (t - e[2]))
        e[1] = rate
        e[2] = t
        e[3] += 1.0
        e[7] = 0.0
        if rate > 0.0:
            e[7] = 1.0
            self.seq += 1
            heapq.heappush(self.heap, (t + e[0] / rate, self.seq, i, int(e[3])))


def fair_rates(demands: list[tuple[float, float, float]]) -> list[float]:
    """Max-min fair rates for kernels with (compute share, bandwidth share, cap) when alone:
    progressive filling until a kernel reaches its cap or a resource (FLOP/s or bandwidth)
    saturates, which freezes every kernel that uses it.  O(k log k) for k kernels (a few more
    passes when a saturated resource leaves kernels that do not use it)."""
    k = len(demands)
    rates = [0.0] * k
    if k == 0:
        return rates
    if k == 1:  # alone: its own cap (its shares are what it uses when alone, so they fit)
        return [demands[0][2]]
    total_c = total_b = 0.0
    for c, b, cap in demands:
        total_c += c * cap
        total_b += b * cap
    if total_c <= 1.0 and total_b <= 1.0:  # everyone at its cap fits: nothing to share
        return [d[2] for d in demands]
    order = sorted(range(k), key=lambda j: demands[j][2])
    pending = set(range(k))
    used = [0.0, 0.0]
    sums = [sum(d[0] for d in demands), sum(d[1] for d in demands)]
    pos = 0
    while pending:
        lam = [(1.0 - used[r]) / sums[r] if sums[r] > 1e-12 else math.inf for r in (0, 1)]
        lam_sat = max(0.0, min(lam))
        while pos < k and order[pos] not in pending:
            pos += 1
        cap_next = demands[order[pos]][2] if pos < k else math.inf
        if cap_next <= lam_sat:
            j = order[pos]
            _freeze(j, cap_next, demands, rates, pending, used, sums)
            continue
        saturated = [r for r in (0, 1) if lam[r] <= lam_sat + 1e-15]
        frozen = [j for j in pending if any(demands[j][r] > 1e-12 for r in saturated)]
        if not frozen:
            frozen = list(pending)
        for j in frozen:
            _freeze(j, lam_sat, demands, rates, pending, used, sums)
    return rates


def _freeze(j: int, rate: float, demands: list[tuple[float, float, float]], rates: list[float],
            pending: set[int], used: list[float], sums: list[float]) -> None:
    rates[j] = rate
    pending.discard(j)
    c, b, _ = demands[j]
    used[0] += rate * c
    used[1] += rate * b
    sums[0] -= c
    sums[1] -= b


__all__ = ["Engine", "Pool", "fair_rates", "hardware_queues"]
