"""Training steps in an execution trace: the autograd engine's backward functions and the
optimizer's ops as graph ops with their true dependencies and costs.

In an Execution Trace of ``loss.backward()`` every backward function runs inside a
record-function scope ``autograd::engine::evaluate_function: <Name>Backward0`` (or
``torch::autograd::AccumulateGrad``) that carries no tensors itself: its tensors are those of
the operator calls inside it (``aten::convolution_backward``, ``aten::mm``, ``aten::detach``
...).  As Chakra's ET converter does, such a scope becomes one op whose inputs are the tensors
its inner calls read that no earlier inner call wrote, and whose outputs are everything they
wrote; the tensor (and storage) ids then link it to the forward ops whose saved tensors it
reads, to the backward ops that consume its gradients and to the optimizer ops that read the
accumulated ``.grad`` tensors.  The autograd function's own record inside the scope is looked
through although ``torch::autograd::AccumulateGrad`` is named like an operator, so an
``AccumulateGrad`` op writes ``.grad``: the ``aten::detach`` of the incoming gradient when
``.grad`` was None (a new tensor id on the gradient's storage: the tensor the optimizer reads),
or the ``aten::add_`` into the existing ``.grad``.  A scope with no operator call inside is
bookkeeping and has no tensors.

Costs (when no measured time is given, and for the FLOPs column): the sum of the inner calls'
shape rules (:func:`workbench.io.torch.costs.cost_of_call`); ``convolution_backward`` gets the
grad-input and grad-weight convolutions (each the forward convolution's FLOPs, as its
``output_mask`` asks) and the bias gradient (one add per output element); matrix products
inside ``AddmmBackward0`` / ``MmBackward0`` are ``aten::mm`` calls with their own rule.
Each op's ``attrs["phase"]`` is ``forward``, ``backward`` or ``optimizer`` (an op inside an
``Optimizer.step#...`` or ``Optimizer.zero_grad#...`` scope), and a backward op keeps its
autograd function in ``attrs["grad_fn"]``.  Complexity: O(nodes) for the scopes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from workbench.ops.costs import Info, ShapeCost, blocks, default_cost, numel, total_bytes

T = TypeVar("T")

AUTOGRAD_PREFIX = "autograd::engine::evaluate_function: "
_OPTIMIZER = re.compile(r"^Optimizer\.(step|zero_grad)#")


def grad_fn_of(name: str) -> str | None:
    """``"autograd::engine::evaluate_function: ConvolutionBackward0"`` -> ``"ConvolutionBackward0"``
    (``torch::autograd::AccumulateGrad`` -> ``AccumulateGrad``); None for other names."""
    if not name.startswith(AUTOGRAD_PREFIX):
        return None
    return name[len(AUTOGRAD_PREFIX):].rsplit("::", 1)[-1].strip() or None


def backward_kind(grad_fn: str) -> str:
    """The kind of a backward op: the forward kind's name with ``_backward``
    (``ConvolutionBackward0`` -> ``conv2d_backward``, ``AddmmBackward0`` ->
    ``matmul_backward``), ``accumulate_grad`` for ``AccumulateGrad``.

    >>> backward_kind("ConvolutionBackward0"), backward_kind("NativeBatchNormBackward0")
    ('conv2d_backward', 'batchnorm_backward')
    """
    from workbench.io.torch.costs import FUNCTIONS

    base = re.sub(r"Backward\d*$", "", grad_fn)
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()
    if base == grad_fn:
        return snake or "backward"
    for key in (snake, snake.removeprefix("native_"), snake.replace("_", "")):
        if key in FUNCTIONS:
            return f"{FUNCTIONS[key][0]}_backward"
    return f"{snake}_backward"


def scope_children(nodes: Mapping[int, Mapping[str, Any]]) -> dict[int, list[int]]:
    """Node id -> its children by ``ctrl_deps``, in id order (the root's self-loop left out)."""
    out: dict[int, list[int]] = {}
    for nid in sorted(nodes):
        parent = nodes[nid].get("ctrl_deps")
        if isinstance(parent, int) and parent in nodes and parent != nid:
            out.setdefault(parent, []).append(nid)
    return out


def inner_calls(nid: int, nodes: Mapping[int, Mapping[str, Any]],
                children: Mapping[int, list[int]], is_operator: Any) -> list[int]:
    """The operator calls directly inside node ``nid`` (record-function scopes between them
    looked through; calls nested in those calls not included), in id order.

    The autograd function's own record inside its scope is looked through too, although
    ``torch::autograd::AccumulateGrad`` is named like an operator: the calls in it
    (``aten::detach`` making the ``.grad`` tensor, ``aten::add_`` accumulating into it) are
    what the scope writes.
    """
    own = _function_record(str(nodes[nid].get("name", "")))
    out, stack = [], list(reversed(children.get(nid, [])))
    while stack:
        c = stack.pop()
        if is_operator(nodes[c]) and (own is None or nodes[c].get("name") != own):
            out.append(c)
        else:
            stack.extend(reversed(children.get(c, [])))
    return sorted(out)


def _function_record(scope: str) -> str | None:
    """The name of the autograd function's own record inside the scope named ``scope``
    (``torch::autograd::AccumulateGrad``, ``ConvolutionBackward0``); None outside autograd."""
    if not scope.startswith(AUTOGRAD_PREFIX):
        return None
    return scope[len(AUTOGRAD_PREFIX):].strip() or None


def _scope_phase(name: str) -> str | None:
    """The phase a record-function scope gives the calls under it, if any."""
    if _OPTIMIZER.match(name):
        return "optimizer"
    return "backward" if name.startswith(AUTOGRAD_PREFIX) else None


def nearest_scope(nodes: Mapping[int, Mapping[str, Any]], label: Callable[[str], T | None],
                  default: T) -> dict[int, T]:
    """Per node id: ``label`` of the nearest node on its ``ctrl_deps`` chain (itself included)
    whose name ``label`` gives a value, else ``default``; the walk ends where the chain leaves
    the trace (a non-integer or boolean id, an unknown node) or repeats.  Memoised along each
    walk, so a chain of n nested scopes costs O(n) in all, not O(n²)."""
    memo: dict[int, T] = {}
    for start in nodes:
        path: list[int] = []
        seen: set[int] = set()
        cur: Any = start
        result = default
        while isinstance(cur, int) and not isinstance(cur, bool) and cur in nodes \
                and cur not in seen:
            if cur in memo:
                result = memo[cur]
                break
            path.append(cur)
            own = label(str(nodes[cur].get("name", "")))
            if own is not None:
                result = own
                break
            seen.add(cur)
            cur = nodes[cur].get("ctrl_deps")
        for node in path:
            memo[node] = result
    return memo


def phases_below(nodes: Mapping[int, Mapping[str, Any]]) -> dict[int, str]:
    """Per node id: the phase of a call whose ``ctrl_deps`` parent it is: that of the nearest
    node on its ``ctrl_deps`` chain (itself included) that is an ``Optimizer.step#``/
    ``zero_grad#`` scope (``optimizer``) or an autograd function (``backward``), else
    ``forward`` (:func:`nearest_scope`)."""
    return nearest_scope(nodes, _scope_phase, "forward")


def phase_of(nid: int, nodes: Mapping[int, Mapping[str, Any]], backward: bool,
             below: Mapping[int, str]) -> str:
    """``optimizer`` when an ancestor is an ``Optimizer.step#``/``zero_grad#`` scope,
    ``backward`` for an autograd function (or a call inside one), else ``forward``; ``below``
    is :func:`phases_below` of the same nodes.  O(1)."""
    if backward:
        return "backward"
    parent = nodes[nid].get("ctrl_deps")
    if not isinstance(parent, int) or parent == nid:
        return "forward"
    return below.get(parent, "forward")


def _conv_backward(ins: Sequence[Info], outs: Sequence[Info], values: Sequence[Any]
                   ) -> ShapeCost | None:
    """``aten::convolution_backward(grad_out, input, weight, ..., output_mask)``: FLOPs of the
    grad-input and grad-weight convolutions (each 2 · output elements · Cin/groups · kh · kw,
    the forward's) as ``output_mask`` asks, plus one add per output element for the bias."""
    if len(ins) < 3 or ins[0] is None or ins[2] is None:
        return None
    grad_out, weight = ins[0], ins[2]
    mask = values[-1] if values and isinstance(values[-1], list) and len(values[-1]) == 3 \
        else [True, True, True]
    forward = 2.0 * grad_out.elements * numel(weight.shape[1:])
    flops = forward * (bool(mask[0]) + bool(mask[1])) + grad_out.elements * bool(mask[2])
    return ShapeCost(flops, total_bytes(ins), total_bytes(outs), blocks(grad_out.elements))


def part_cost(label: str, ins: Sequence[Info], outs: Sequence[Info],
              values: Sequence[Any]) -> ShapeCost:
    """The cost of one inner call (module docstring)."""
    from workbench.io.torch.costs import cost_of_call

    if label == "convolution_backward":
        cost = _conv_backward(ins, outs, values)
        if cost is not None:
            return cost
    _, cost, attrs = cost_of_call(label, ins, outs, values)
    return cost if cost is not None else default_cost(ins, outs)


def summed(costs: Sequence[ShapeCost]) -> ShapeCost:
    """The cost of a scope: its inner calls' FLOPs and bytes added, the widest launch."""
    return ShapeCost(sum(c.flops for c in costs), sum(c.bytes_read for c in costs),
                     sum(c.bytes_written for c in costs),
                     max((c.thread_blocks for c in costs), default=1))


__all__ = ["AUTOGRAD_PREFIX", "backward_kind", "grad_fn_of", "inner_calls", "nearest_scope",
           "part_cost", "phase_of", "phases_below", "scope_children", "summed"]
