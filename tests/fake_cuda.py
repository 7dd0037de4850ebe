"""A fake ``torch.cuda`` that fails where a GPU would: asynchronous streams, a caching allocator,
CUDA-graph capture rules and the stream pool, on CPU tensors (issue 42).

:class:`StrictCuda` has the interface and call log of ``tests/test_torch_cuda_fake.py``'s
:class:`FakeCuda` (the executor and ScheduledModule take either), but inside
:meth:`StrictCuda.running` (which ``device()`` enters too, as the runner's CUDA paths do) every
torch op is intercepted by a ``TorchDispatchMode`` and behaves as on a device:

* **Asynchrony.**  An op issued on a stream is queued there and runs only when something waits
  for it: ``synchronize()``, ``Stream.synchronize()``, ``Event.synchronize()``, or a host read
  through torch (``.item()``, ``torch.equal``, ...: the current stream is drained first).  Queued
  work runs adversarially: of all the streams whose next item may run (a wait runs once the work
  recorded before its event has run), the one issued *last* runs first, so a read that no wait
  orders after its writer runs before it and sees garbage (a block handed out is filled with
  NaN, or ``-1`` for integers, by a fill queued on its stream).  ``Tensor.numpy()`` is not
  intercepted: read results after a synchronisation.
* **Races** are errors, whatever the order queued work happens to run in: every op's reads and
  writes of the allocator's blocks are checked against the block's earlier accesses with vector
  clocks of CUDA's ordering rules (stream order; a wait orders after what its event's record
  followed; a host synchronisation orders everything issued after it after what it waited for),
  so a read not ordered after the block's last write, or a write not ordered after its last
  reads and write, raises :class:`CudaError` naming both ops and streams.
* **The caching allocator.**  An op's outputs are blocks of a pool per stream (and a private pool
  per CUDA graph during its capture).  A block whose tensors are all gone is handed out again
  *at once* to the next allocation on the stream it was allocated on, as PyTorch's allocator
  does, unless ``record_stream`` named other streams for it: then only once those streams have
  run what was issued to them before the block was found free (the host then knows it: what it
  issues next is ordered after that), and during a capture not at all.  Queued work holds no
  reference to the tensors it reads (a GPU kernel holds none), so a tensor freed while another
  stream has yet to read it is overwritten by the next allocation on its stream: a race.
* **CUDA graphs.**  ``graph(g, stream)`` synchronises (as ``torch.cuda.graph`` does), then
  records instead of running: the capture stream is captured; a stream joins the capture by
  waiting on an event recorded in it; work on a stream before it joined, a captured stream's wait
  on an event recorded outside the capture, and a captured stream not joined back into the
  capture stream at ``capture_end`` are errors, as are ``synchronize()`` (device, stream or
  event), ``query()``, ``elapsed_time``, host reads (``.item()`` ...) and copies from a pageable
  host tensor (:meth:`StrictCuda.host`) under capture, and a timing event recorded in a capture
  that is not ``external``.  ``replay()`` queues the captured work on the current stream; when
  it runs, the memory the capture allocated holds garbage and every captured op reads what its
  input blocks hold *then* (the static inputs as the last copy-in left them).
* **Timing.**  ``elapsed_time`` needs both events recorded and run (an event recorded only in a
  capture has run once a replay of it has run), else ``CudaError`` (CUDA's
  ``cudaErrorNotReady``); one tick (1 µs) per op run.
* **The stream pool.**  ``Stream()`` hands out :data:`POOL` streams per priority round-robin, as
  ``torch.cuda.Stream()`` does: the 33rd is the 1st again (``cuda_stream`` is its handle; the
  two objects compare equal and share one queue).

Which mutation of the real code each rule catches: ``tests/test_fake_cuda_rules.py``.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

POOL = 32  # torch.cuda.Stream()'s pool per priority and device (kStreamsPerPool)
ROUND = 512  # the allocator rounds block sizes up to this many bytes

VC = dict  # a vector clock: Queue -> how many of its items are known to have been issued


class CudaError(RuntimeError):
    """What a CUDA call that a GPU refuses raises here (torch raises ``RuntimeError`` too)."""


def _merge(into: dict[Any, int], other: dict[Any, int]) -> None:
    for k, v in other.items():
        if into.get(k, 0) < v:
            into[k] = v


# ---------------------------------------------------------------------------- queued work
@dataclass(eq=False)
class Work:
    """One item on a stream's queue: an op (``run``), an event record, a wait on a record, or a
    graph replay; ``index``: its place on its queue, ``vc``: what it is ordered after."""

    seq: int
    kind: str
    name: str = ""
    run: Callable[[], None] | None = None
    event: Any = None
    target: Work | None = None  # a wait: the record it waits for (None: nothing)
    graph: Any = None
    reads: tuple[Block, ...] = ()
    writes: tuple[Block, ...] = ()
    queue: Queue | None = None
    index: int = 0
    vc: dict[Any, int] = field(default_factory=dict)
    done: bool = False
    captured: bool = False  # issued in a capture: ``index`` and ``vc`` count the capture's

    def before(self, vc: dict[Any, int]) -> bool:
        """Whether CUDA orders this item before work whose clock is ``vc``."""
        return self.index <= vc.get(self.queue, 0)


@dataclass(eq=False)
class Queue:
    """One CUDA stream: what was issued to it and not yet run, and its clock."""

    name: str
    pending: deque[Work] = field(default_factory=deque)
    issued: int = 0
    ran: int = 0
    vc: dict[Any, int] = field(default_factory=dict)


@dataclass(eq=False)
class Access:
    """A block's last write and, per stream, its last read since."""

    write: Work | None = None
    reads: dict[Queue, Work] = field(default_factory=dict)


@dataclass(eq=False)
class Block:
    """A block of the caching allocator: its storage (kept by the pool), size, home stream and
    owner (``None``: the general pool; else the graph whose capture allocated it)."""

    storage: Any
    nbytes: int
    home: Queue
    owner: Any
    uses: set[Queue] = field(default_factory=set)  # record_stream'd streams
    freed: dict[Queue, dict[Any, int]] | None = None  # those streams' clocks when found free

    def free(self) -> bool:
        return torch._C._storage_Use_Count(self.storage._cdata) == 1


@dataclass(frozen=True)
class Ref:
    """A tensor as queued work holds it: where it lives, no reference to its storage's users."""

    block: Block
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: Any

    def tensor(self) -> Any:
        return torch.empty(0, dtype=self.dtype).set_(self.block.storage, self.offset, self.size,
                                                     self.stride)


# ---------------------------------------------------------------------------- streams, events
class StrictStream:
    """A stream object; objects for the same pool slot share one :class:`Queue` and compare
    equal."""

    def __init__(self, cuda: StrictCuda, sid: int, queue: Queue, handle: int) -> None:
        self.cuda, self.id, self.queue, self.cuda_stream = cuda, sid, queue, handle

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StrictStream) and other.queue is self.queue

    def __hash__(self) -> int:
        return hash(id(self.queue))

    def __repr__(self) -> str:
        return f"<stream {self.id} ({self.queue.name})>"

    def wait_event(self, event: StrictEvent) -> None:
        self.cuda.log.append(("wait", self.id, event.id))
        self.cuda._wait(self, event)

    def wait_stream(self, other: StrictStream) -> None:
        self.cuda.log.append(("wait_stream", self.id, other.id))
        marker = StrictEvent(self.cuda, -1, False, False)
        self.cuda._record(marker, other)
        self.cuda._wait(self, marker)

    def record_event(self, event: StrictEvent | None = None) -> StrictEvent:
        event = event or self.cuda.Event()
        event.record(self)
        return event

    def synchronize(self) -> None:
        self.cuda._refuse_under_capture("Stream.synchronize()")
        self.cuda.log.append(("synchronize",))
        self.cuda._drain(lambda: not self.queue.pending)
        _merge(self.cuda.host_vc, self.queue.vc)

    def query(self) -> bool:
        self.cuda._refuse_under_capture("Stream.query()")
        return not self.queue.pending


class StrictEvent:
    def __init__(self, cuda: StrictCuda, eid: int, enable_timing: bool, external: bool) -> None:
        self.cuda, self.id = cuda, eid
        self.enable_timing, self.external = enable_timing, external
        self.last: Work | None = None  # its last record
        self.tick: int | None = None

    def record(self, stream: StrictStream | None = None) -> None:
        stream = stream or self.cuda.current
        if self.enable_timing and self.cuda.capture is not None and not self.external:
            self.cuda._fail("a timing event inside a capture must be external")
        self.cuda.log.append(("record", stream.id, self.id))
        self.cuda._record(self, stream)

    def wait(self, stream: StrictStream | None = None) -> None:
        (stream or self.cuda.current).wait_event(self)

    def query(self) -> bool:
        self.cuda._refuse_under_capture("Event.query()")
        if self.last is not None and not self.last.done:
            self.cuda._step()
        return self.last is None or self.last.done

    def synchronize(self) -> None:
        self.cuda._refuse_under_capture("Event.synchronize()")
        self.cuda.log.append(("synchronize",))
        self.cuda._drain(lambda: self.last is None or self.last.done)
        if self.last is not None:
            _merge(self.cuda.host_vc, self.last.vc)

    def elapsed_time(self, end: StrictEvent) -> float:
        self.cuda._refuse_under_capture("Event.elapsed_time()")
        if not (self.enable_timing and end.enable_timing):
            self.cuda._fail("elapsed_time needs events created with enable_timing=True")
        for e in (self, end):
            if e.last is None:
                self.cuda._fail(f"elapsed_time: event {e.id} was never recorded")
            assert e.last is not None
            if not e.last.done or e.tick is None:
                self.cuda._fail(f"elapsed_time: event {e.id} has not completed "
                                f"(cudaErrorNotReady): synchronise first, or replay the graph "
                                f"it was captured in")
        assert self.tick is not None and end.tick is not None
        return (end.tick - self.tick) * 1e-3  # one tick = 1 µs, in ms as torch answers


class StrictGraph:
    def __init__(self, cuda: StrictCuda, gid: int) -> None:
        self.cuda, self.id = cuda, gid
        self.captured: dict[Queue, list[Work]] | None = None
        self.reads: tuple[Block, ...] = ()
        self.writes: tuple[Block, ...] = ()
        self.replays = 0

    def replay(self) -> None:
        cuda = self.cuda
        if self.captured is None:
            cuda._fail(f"graph {self.id} was never captured")
        cuda._refuse_under_capture("CUDAGraph.replay()")
        cuda.log.append(("replay", cuda.current.id, self.id))
        cuda._issue(cuda.current, Work(next(cuda._seq), "graph", f"replay of graph {self.id}",
                                       graph=self, reads=self.reads, writes=self.writes))


@dataclass(eq=False)
class Capture:
    """A capture under way: its graph, capture stream, the streams that joined, what each
    issued (and how many), their clocks inside the capture, and the blocks' accesses."""

    graph: StrictGraph
    origin: Queue
    members: set[Queue]
    works: dict[Queue, list[Work]]
    count: dict[Queue, int] = field(default_factory=dict)
    knows: dict[Queue, dict[Any, int]] = field(default_factory=dict)
    access: dict[Block, Access] = field(default_factory=dict)
    records: set[int] = field(default_factory=set)  # id() of the records made in it


# ---------------------------------------------------------------------------- the fake
class StrictCuda:
    """The fake ``torch.cuda`` (see the module docstring).  ``log`` has FakeCuda's entries;
    ``errors`` every rule broken (each also raised as :class:`CudaError`)."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.streams: list[StrictStream] = []
        self.events: list[StrictEvent] = []
        self.graphs: list[StrictGraph] = []
        self.errors: list[str] = []
        self._seq = itertools.count(1)
        self._queues: dict[tuple[int, int], Queue] = {}
        self._next_slot: dict[int, int] = {}
        self.default = StrictStream(self, -1, Queue("default stream"), -1)
        self.current = self.default
        self.capture: Capture | None = None
        self._capture_stream: StrictStream | None = None
        self.clock = 0
        self.host_vc: dict[Any, int] = {}  # what the host knows has run
        self.blocks: dict[int, Block] = {}
        self.access: dict[Block, Access] = {}
        self._host: set[int] = set()
        self._mode_depth = 0
        self.peak_bytes = 0

    # ------------------------------------------------------------------ torch.cuda's names
    @property
    def capturing(self) -> bool:
        return self.capture is not None

    def Stream(self, priority: int = 0) -> StrictStream:  # noqa: N802 - torch's names
        slot = self._next_slot.get(priority, 0)
        self._next_slot[priority] = (slot + 1) % POOL
        queue = self._queues.setdefault((priority, slot), Queue(f"pool stream {priority}/{slot}"))
        s = StrictStream(self, len(self.streams), queue, priority * POOL + slot)
        self.streams.append(s)
        return s

    def Event(self, enable_timing: bool = False, external: bool = False) -> StrictEvent:  # noqa: N802
        e = StrictEvent(self, len(self.events), enable_timing, external)
        self.events.append(e)
        return e

    def CUDAGraph(self) -> StrictGraph:  # noqa: N802
        g = StrictGraph(self, len(self.graphs))
        self.graphs.append(g)
        return g

    @contextmanager
    def stream(self, stream: StrictStream | None) -> Iterator[None]:
        previous, self.current = self.current, stream or self.current
        try:
            yield
        finally:
            self.current = previous

    def current_stream(self) -> StrictStream:
        return self.current

    def current_device(self) -> int:
        return 0

    @contextmanager
    def graph(self, cuda_graph: StrictGraph, stream: StrictStream | None = None) -> Iterator[None]:
        if self.capture is not None:
            self._fail("a capture began inside another capture")
        if stream is None:
            self._capture_stream = self._capture_stream or self.Stream()
            stream = self._capture_stream
        self.synchronize()  # torch.cuda.graph synchronises before capture_begin
        self.log.append(("capture_begin", stream.id, cuda_graph.id))
        cap = Capture(cuda_graph, stream.queue, {stream.queue}, {stream.queue: []})
        self.capture = cap
        ok = False
        try:
            with self.stream(stream):
                yield
            ok = True
        finally:
            self.capture = None
            self.log.append(("capture_end", stream.id, cuda_graph.id))
            cuda_graph.captured = cap.works
            cuda_graph.reads = tuple({b for w in _all(cap) for b in w.reads})
            cuda_graph.writes = tuple({b for w in _all(cap) for b in w.writes})
            if ok:
                self._end_capture(cap)

    def _end_capture(self, cap: Capture) -> None:
        origin = cap.knows.get(cap.origin, {})
        for q in sorted(cap.members - {cap.origin}, key=lambda q: q.name):
            if origin.get(q, 0) < cap.count.get(q, 0):
                self._fail(f"capture_end: {q.name} was not joined back into the capture "
                           f"stream (cudaErrorStreamCaptureUnjoined)")

    def synchronize(self) -> None:
        self._refuse_under_capture("synchronize()")
        self.log.append(("synchronize",))
        self._drain(lambda: False)
        for q in self._all_queues():
            _merge(self.host_vc, q.vc)

    def record_stream(self, tensor: Any, stream: StrictStream) -> None:
        """``tensor.record_stream(stream)``: its block is not handed out again before
        ``stream`` has run what was issued to it by the time the block is free."""
        ptr = tensor.untyped_storage().data_ptr()
        self.log.append(("record_stream", ptr, stream.id))
        block = self.blocks.get(ptr)
        if block is not None and stream.queue is not block.home:
            block.uses.add(stream.queue)

    def is_available(self) -> bool:
        return True

    def device(self, device: Any = None) -> Any:
        return self.running()

    def get_device_name(self, device: Any = None) -> str:
        return "Fake H200"

    def get_device_properties(self, device: Any = None) -> Any:
        return SimpleNamespace(name="Fake H200", major=9, minor=0, multi_processor_count=132,
                               total_memory=141 << 30)

    def reset_peak_memory_stats(self) -> None:
        self.log.append(("reset_peak",))
        self.peak_bytes = self._live_bytes()

    def max_memory_allocated(self) -> int:
        return max(self.peak_bytes, self._live_bytes())

    # ------------------------------------------------------------------ what tests use
    @contextmanager
    def running(self) -> Iterator[None]:
        """Torch ops inside run as on this device (queued on the current stream)."""
        self._mode_depth += 1
        try:
            if self._mode_depth > 1:
                yield
            else:
                with _Device(self):
                    yield
        finally:
            self._mode_depth -= 1

    def host(self, tensor: Any) -> Any:
        """Mark ``tensor`` as pageable host memory (copies from it cannot be captured)."""
        self._host.add(tensor.untyped_storage().data_ptr())
        return tensor

    def pending(self) -> int:
        """How many items are queued and not yet run."""
        return sum(len(q.pending) for q in self._all_queues())

    # ------------------------------------------------------------------ rules
    def _fail(self, message: str) -> None:
        self.errors.append(message)
        raise CudaError(message)

    def _refuse_under_capture(self, what: str) -> None:
        if self.capture is not None:
            self._fail(f"{what} is not permitted while a stream is capturing "
                       f"(cudaErrorStreamCaptureUnsupported)")

    def _all_queues(self) -> list[Queue]:
        return [self.default.queue, *self._queues.values()]

    def _check(self, work: Work, table: dict[Block, Access]) -> None:
        """The race rule: ``work``'s reads follow each block's last write, its writes follow
        the block's last write and reads; then ``work`` is the block's last access."""
        def race(other: Work, verb: str, theirs: str) -> None:
            assert other.queue is not None and work.queue is not None
            self._fail(f"race: {work.name or work.kind} on {work.queue.name} {verb} a block "
                       f"that {other.name or other.kind} on {other.queue.name} {theirs}, and "
                       f"no event or synchronisation orders the two")

        for block in work.reads:
            acc = table.get(block)
            if acc is not None and acc.write is not None and not acc.write.before(work.vc):
                race(acc.write, "reads", "writes")
        for block in work.writes:
            acc = table.get(block)
            if acc is None:
                continue
            if acc.write is not None and not acc.write.before(work.vc):
                race(acc.write, "writes", "writes")
            for r in acc.reads.values():
                if r is not work and not r.before(work.vc):
                    race(r, "writes", "reads")
        for block in work.reads:
            table.setdefault(block, Access()).reads[work.queue] = work  # type: ignore[index]
        for block in work.writes:
            table[block] = Access(write=work)

    # ------------------------------------------------------------------ issuing
    def _issue(self, stream: StrictStream, work: Work) -> None:
        cap, q = self.capture, stream.queue
        work.queue = q
        if cap is not None:
            if q not in cap.members:
                self._fail(f"{work.name or work.kind} on {stream!r} during the capture before "
                           f"the stream joined it (it would run outside the graph: wait on an "
                           f"event recorded in the capture first)")
            if work.kind == "graph":
                self._fail("a graph replay inside a capture")
            work.captured = True
            cap.count[q] = work.index = cap.count.get(q, 0) + 1
            knows = cap.knows.setdefault(q, {})
            knows[q] = work.index
            work.vc = dict(knows)
            self._check(work, cap.access)
            cap.works[q].append(work)
            return
        _merge(q.vc, self.host_vc)
        q.issued = work.index = q.issued + 1
        q.vc[q] = work.index
        work.vc = dict(q.vc)
        self._check(work, self.access)
        q.pending.append(work)

    def _record(self, event: StrictEvent, stream: StrictStream) -> None:
        work = Work(next(self._seq), "record", f"record of event {event.id}", event=event)
        self._issue(stream, work)
        event.last = work
        if self.capture is not None:
            self.capture.records.add(id(work))

    def _wait(self, stream: StrictStream, event: StrictEvent) -> None:
        cap, q = self.capture, stream.queue
        target = event.last
        work = Work(next(self._seq), "wait", f"wait on event {event.id}", target=target)
        if cap is not None:
            if target is not None and id(target) in cap.records:  # joins (or learns more)
                cap.members.add(q)
                cap.works.setdefault(q, [])
                _merge(cap.knows.setdefault(q, {}), target.vc)
            elif q in cap.members:
                self._fail(f"{stream!r} waits during the capture on event {event.id}, "
                           f"recorded outside it (cudaErrorStreamCaptureIsolation)")
            else:  # a stream outside the capture waiting on outside work: not captured
                self.capture = None
                try:
                    self._wait(stream, event)
                finally:
                    self.capture = cap
                return
        elif target is not None and not target.captured:
            _merge(q.vc, target.vc)
        self._issue(stream, work)

    # ------------------------------------------------------------------ running
    @staticmethod
    def _runnable(work: Work) -> bool:
        return work.kind != "wait" or work.target is None or work.target.done

    def _step(self, replaying: dict[Queue, deque[Work]] | None = None) -> bool:
        """Run the runnable head issued last (of the streams' queues, or of one replay's);
        False when none can run."""
        queues = replaying if replaying is not None else {q: q.pending
                                                           for q in self._all_queues()}
        heads = [(pend[0].seq, k) for k, (q, pend) in enumerate(queues.items())
                 if pend and self._runnable(pend[0])]
        if not heads:
            return False
        _, k = max(heads)
        q = list(queues)[k]
        work = queues[q].popleft()
        if replaying is None:
            q.ran += 1
        self._execute(work)
        return True

    def _drain(self, until: Callable[[], bool]) -> None:
        while not until():
            if not self._step():
                if self.pending():
                    self._fail("queued work waits on something that can never run")
                return

    def _execute(self, work: Work) -> None:
        if work.kind == "op":
            assert work.run is not None
            with _disable_current_modes(), torch.no_grad():
                work.run()
            self.clock += 1
        elif work.kind == "record":
            work.event.tick = self.clock
        elif work.kind == "graph":
            self._run_graph(work.graph)
        work.done = True

    def _run_graph(self, graph: StrictGraph) -> None:
        """One replay: the captured work of every captured stream, adversarially, as one unit.
        The memory its capture allocated holds garbage when the replay starts (what the last
        replay left there is not this replay's value)."""
        assert graph.captured is not None
        with _disable_current_modes():
            for block in self.blocks.values():
                if block.owner is graph:
                    block.storage.fill_(0xFF)
        for works in graph.captured.values():
            for w in works:
                w.done = False
        queues = {q: deque(works) for q, works in graph.captured.items()}
        while any(queues.values()):
            if not self._step(queues):
                self._fail(f"graph {graph.id}: captured work waits on something never run")
        graph.replays += 1

    # ------------------------------------------------------------------ the allocator
    def _live_bytes(self) -> int:
        return sum(b.nbytes for b in self.blocks.values() if not b.free())

    def _allocate(self, size: tuple[int, ...], stride: tuple[int, ...], dtype: Any) -> Any:
        q = self.current.queue
        cap = self.capture
        owner = cap.graph if cap is not None else None
        items = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride,
                                                                        strict=True))
        nbytes = max(ROUND, -(-items * dtype.itemsize // ROUND) * ROUND)
        best = None
        for block in self.blocks.values():
            if block.home is not q or block.owner is not owner or block.nbytes < nbytes or \
                    not block.free():
                continue
            if block.uses:
                if cap is not None:
                    continue  # freed with recorded uses during a capture: after it ends
                if block.freed is None:
                    block.freed = {u: dict(u.vc) for u in block.uses}
                if any(u.ran < vc.get(u, 0) for u, vc in block.freed.items()):
                    continue
            if best is None or block.nbytes < best.nbytes:
                best = block
        if best is None:
            with _disable_current_modes():
                storage = torch.UntypedStorage(nbytes)
                storage.fill_(0xFF)  # type: ignore[attr-defined]  # NaN, or -1: unwritten
            best = Block(storage, nbytes, q, owner)
            self.blocks[storage.data_ptr()] = best
        else:
            for vc in (best.freed or {}).values():  # the host saw those streams get there
                _merge(self.host_vc, vc)
            if cap is None:  # garbage for its new tensor (a capture's: at each replay)
                block = best
                self._issue(self.current, Work(next(self._seq), "op", "a block handed out",
                                               run=lambda: block.storage.fill_(0xFF),
                                               writes=(block,)))
        best.uses, best.freed = set(), None
        with _disable_current_modes():
            out = torch.empty(0, dtype=dtype).set_(best.storage, 0, size, stride)
        self.peak_bytes = max(self.peak_bytes, self._live_bytes())
        return out

    def _ref(self, x: Any) -> Any:
        """What queued work keeps of an argument: a :class:`Ref` for a block's tensor, a copy of
        a pageable host tensor (its copy is staged when issued), other values as they are."""
        if not isinstance(x, torch.Tensor):
            return x
        ptr = x.untyped_storage().data_ptr()
        block = self.blocks.get(ptr)
        if block is not None:
            return Ref(block, int(x.storage_offset()), tuple(x.size()), tuple(x.stride()),
                       x.dtype)
        if ptr in self._host:
            with _disable_current_modes():
                return x.clone()
        return x  # memory the allocator does not manage (parameters, inputs made outside)

    def _host_read(self, name: str, tensors: list[Any]) -> None:
        """A host read through torch (``.item()`` ...): the current stream is drained first;
        what it reads must be ordered before that."""
        self._refuse_under_capture(f"{name} (a host read)")
        queue = self.current.queue
        self._drain(lambda: not queue.pending)
        _merge(self.host_vc, queue.vc)
        for t in tensors:
            block = self.blocks.get(t.untyped_storage().data_ptr())
            acc = self.access.get(block) if block is not None else None
            if acc is not None and acc.write is not None and not acc.write.before(self.host_vc):
                assert acc.write.queue is not None
                self._fail(f"race: the host reads ({name}) what {acc.write.name} on "
                           f"{acc.write.queue.name} writes, with no synchronisation between")


def _all(cap: Capture) -> list[Work]:
    return [w for works in cap.works.values() for w in works]


def _value(x: Any) -> Any:
    return x.tensor() if isinstance(x, Ref) else x


def _blocks(refs: Any) -> tuple[Block, ...]:
    return tuple({id(r.block): r.block for r in tree_flatten(refs)[0]
                  if isinstance(r, Ref)}.values())


_VIEWS_TOO = {"aten::_unsafe_view", "aten::lift_fresh"}


class _Device(TorchDispatchMode):
    """Every torch op under it runs as on :class:`StrictCuda`'s device."""

    def __init__(self, cuda: StrictCuda) -> None:
        super().__init__()
        self.cuda = cuda

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        cuda = self.cuda
        schema = func._schema
        if func.is_view or schema.name in _VIEWS_TOO:
            return func(*args, **kwargs)  # metadata only: the same storage
        flat = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
        tags = set(getattr(func, "tags", ()))
        if (not all("Tensor" in str(r.type) for r in schema.returns)
                or torch.Tag.dynamic_output_shape in tags
                or torch.Tag.data_dependent_output in tags):
            cuda._host_read(schema.name, flat)
            return func(*args, **kwargs)
        if cuda.capture is not None and schema.name in ("aten::copy_", "aten::_to_copy"):
            if any(x.untyped_storage().data_ptr() in cuda._host for x in flat):
                cuda._fail(f"{schema.name} from pageable host memory under capture "
                           f"(cudaErrorStreamCaptureUnsupported)")
        written = {a.name for a in schema.arguments if a.alias_info is not None
                   and a.alias_info.is_write}
        named = dict(zip([a.name for a in schema.arguments], args, strict=False)) | kwargs
        wrote = _blocks(tree_map(cuda._ref, [v for k, v in named.items() if k in written]))
        refs = tree_map(cuda._ref, (args, kwargs))
        read = tuple(b for b in _blocks(refs) if b not in wrote)
        if written:  # in place (or out=): the written tensors are the results
            def run_in_place() -> None:
                a, k = tree_map(_value, refs)
                func(*a, **k)

            cuda._issue(cuda.current, Work(next(cuda._seq), "op", schema.name, run=run_in_place,
                                           reads=read, writes=wrote))
            return self._written_results(func, named)
        leaves, spec = tree_flatten(self._shaped(func, args, kwargs))
        outs = [cuda._allocate(tuple(t.size()), tuple(t.stride()), t.dtype)
                if isinstance(t, torch.Tensor) else t for t in leaves]
        out_refs = [cuda._ref(t) for t in outs]

        def run() -> None:
            a, k = tree_map(_value, refs)
            got, _ = tree_flatten(func(*a, **k))
            for o, g in zip(out_refs, got, strict=True):
                if isinstance(o, Ref) and g.numel():  # (the CPU leaves some unused ones empty)
                    o.tensor().copy_(g)

        cuda._issue(cuda.current, Work(next(cuda._seq), "op", schema.name, run=run, reads=read,
                                       writes=_blocks(out_refs)))
        return tree_unflatten(outs, spec)

    @staticmethod
    def _written_results(func: Any, named: dict[str, Any]) -> Any:
        schema = func._schema
        outs = []
        for r in schema.returns:
            match = [a.name for a in schema.arguments if a.alias_info is not None
                     and r.alias_info is not None
                     and a.alias_info.before_set == r.alias_info.before_set]
            outs.append(named[match[0]] if match else None)
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _shaped(self, func: Any, args: Any, kwargs: Any) -> Any:
        """The op's results with the right shapes, strides and dtypes (values unused): run on
        meta tensors, else on the current (maybe unwritten) values, else after draining."""
        def meta(x: Any) -> Any:
            if isinstance(x, torch.Tensor):
                return torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device="meta")
            return x

        margs, mkwargs = tree_map(meta, (args, kwargs))
        if "device" in mkwargs:
            mkwargs["device"] = "meta"
        mkwargs.pop("pin_memory", None)
        try:
            return func(*margs, **mkwargs)
        except (NotImplementedError, RuntimeError, TypeError):
            pass
        try:
            return func(*args, **kwargs)
        except (RuntimeError, IndexError, ValueError):
            self.cuda._refuse_under_capture(f"{func._schema.name} (its shape needs values)")
            self.cuda._drain(lambda: False)
            return func(*args, **kwargs)


def on_the_runner(monkeypatch: Any, cuda: Any) -> Any:
    """Make ``cuda`` (this module's :class:`StrictCuda`, or any fake with the ``torch.cuda``
    interface the executor uses) the torch executor's CUDA for one test, the model's tensors
    staying on the CPU; returns ``cuda``."""
    from workbench.executors.torch_exec import runner

    monkeypatch.setattr(runner, "_cuda_api", lambda: cuda)
    monkeypatch.setattr(runner, "_tensor_device", lambda device: "cpu")
    return cuda


__all__ = ["POOL", "CudaError", "StrictCuda", "StrictEvent", "StrictGraph", "StrictStream",
           "on_the_runner"]
