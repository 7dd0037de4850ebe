"""``torch.compile(model, backend="workbench")``: dynamo's graphs run the way the workbench says.

TorchDynamo hands a backend each captured ``torch.fx.GraphModule`` with example inputs (the
model's parameters among them, as inputs dynamo marks static; after a recompilation for another
size, a symbolic size such as ``s0`` among them too).  :func:`workbench_backend` returns a
:class:`CompiledGraph`, which specialises per concrete input signature at run time: on the first
call with a signature it imports the GraphModule with that call's inputs as a
:class:`~workbench.values.graph.Graph` whose program is the GraphModule
(:func:`workbench.io.torch.fx.graph_of_traced`: shapes propagated on fake tensors, in-place writes
ordered), then does what :func:`workbench.accelerate` does (``policy="auto"`` measures the
policies and the GraphModule itself on a GPU and keeps the fastest beyond noise; later
signatures use the policy it chose) and keeps the result for that signature (at most
:data:`~workbench.executors.torch_exec.module.MAX_SPECIALISATIONS`, the least recently used
dropped first).  Dynamo compiles again, and so calls the backend again, after a graph break or
when its guards fail, so data-dependent control flow is handled by dynamo's own guards.

Nothing raises for a shape, a graph break or grad mode: each fallback runs the GraphModule
itself (as dynamo captured it) and says so in one warning line, once per compiled function and
kind: a graph that cannot be imported or scheduled (its error in the line), a graph that draws
random numbers or updates batch statistics (training mode: nothing to verify against), a call
with grad mode on where an input requires grad (autograd records the GraphModule itself, so
``loss.backward()`` works), and ``auto`` on the CPU (no schedule can beat it: one issue order).

Options: ``torch.compile(model, backend="workbench", options={"policy": "nnc", "mode":
"eager", ...})`` (:data:`workbench.orchestration.accelerate.OPTIONS`; an unknown one is a one-line
error).  The backend is registered through the ``torch_dynamo_backends`` entry point in
``pyproject.toml`` (torch finds it on first lookup, without importing the workbench first), and,
in a process that imported ``workbench`` in either order with torch, by
:mod:`workbench.orchestration.backend_hook` (``import workbench`` installs it: it registers the
backend as soon as dynamo's backend registry is imported).
"""

from __future__ import annotations

import warnings
from typing import Any

from workbench._checks import first_line
from workbench.errors import OptionError
from workbench.orchestration.accelerate import CPU_DECISION, OPTIONS, accelerate_graph

NAME = "workbench"
WHERE = "workbench.compile"
#: Calls that draw random numbers: a graph holding one gives other outputs on every call.
RANDOM_CALLS = frozenset({"rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
                          "randperm", "bernoulli", "bernoulli_", "multinomial", "normal",
                          "normal_", "uniform_", "exponential_", "random_", "native_dropout",
                          "rrelu", "rrelu_"})


def workbench_backend(gm: Any, example_inputs: list[Any], *,
                      options: dict[str, Any] | None = None) -> Any:
    """The dynamo backend: a callable computing what ``gm`` computes under the chosen schedule
    for each input signature (see the module docstring)."""
    from workbench.orchestration.accelerate import check_options

    opts = dict(options or {})
    unknown = [k for k in opts if k not in OPTIONS]
    if unknown:
        raise OptionError(f"torch.compile backend 'workbench': unknown option {unknown[0]!r} "
                          f"(options: {', '.join(OPTIONS)})")
    check_options(opts.get("policy", "auto"), opts.get("mode", "graph"), opts.get("precision"),
           opts.get("repeats", 20), opts.get("warmup", 3))  # a wrong value: raised, not run
    return CompiledGraph(gm, opts)


class CompiledGraph:
    """One compiled function of dynamo's: ``gm`` run under a schedule per input signature.

    ``built`` holds what each signature runs (a ``ScheduledModule``'s ``forward``, or
    ``gm`` itself); ``policy`` is the policy asked for, then the one ``auto`` chose;
    ``reasons`` the lines said so far."""

    def __init__(self, gm: Any, options: dict[str, Any]) -> None:
        from workbench.executors.torch_exec.module import Notes, Specialisations

        self.gm = gm
        self.options = options
        self.policy: str = options.get("policy", "auto")
        self.notes = Notes(WHERE)
        self.built = Specialisations(self._build)
        self.itself: str | None = None  # why every signature runs gm itself, once decided

    @property
    def reasons(self) -> set[str]:
        return set(self.notes.said)

    def __call__(self, *inputs: Any) -> Any:
        from workbench.executors.torch_exec.module import records_grad, signature

        if records_grad(inputs):
            self._say("grad", "grad mode is on and an input requires grad: running the "
                              "captured graph itself so that autograd records it (call under "
                              "torch.no_grad() to run the schedule)")
            return self.gm(*inputs)
        return self.built.get(signature(inputs), inputs)(*inputs)

    def _say(self, kind: str, text: str) -> None:
        self.notes.say(kind, f"torch.compile backend 'workbench' ({type(self.gm).__name__}, "
                             f"{len(self.gm.graph.nodes)} nodes): {text}")

    def _build(self, inputs: tuple[Any, ...]) -> Any:
        """What calls with ``inputs``' signature run (see the module docstring)."""
        from workbench.executors.torch_exec.module import ModelItself, is_static_input
        from workbench.io.torch.fx import graph_of_traced
        from workbench.orchestration.accelerate import device_api, model_device

        if self.itself is not None:
            return self.gm
        random = random_calls(self.gm)
        if random:
            self.itself = "random"
            self._say("random", f"the graph {random}, so its outputs differ from call to call "
                                f"and no schedule can be checked against it: running it as "
                                f"captured")
            return self.gm
        opts = {**self.options, "policy": self.policy}
        if (self.policy == "auto" and opts.get("policies") is None
                and device_api(model_device(self.gm, inputs))[1] is None):
            self.itself = "cpu"
            self._say("cpu", CPU_DECISION.replace("the model", "the captured graph"))
            return self.gm
        static = {i for i, x in enumerate(inputs) if is_static_input(x)}
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                graph = graph_of_traced(self.gm, tuple(inputs), tracer="dynamo",
                                        name=type(self.gm).__name__, parameters=static)
                fast = accelerate_graph(graph, self.gm, tuple(inputs), **opts)
        except OptionError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure: the graph as captured
            self._say("failed", f"cannot import or schedule the graph ({first_line(exc)}); "
                                f"running it as captured")
            return self.gm
        for w in said:  # accelerate's fallback lines (warn_line), said once here
            if str(w.filename) == "workbench.accelerate":
                self._say("fallback", str(w.message))
        if isinstance(fast, ModelItself):
            if self.policy == "auto":
                self.itself = fast.reason  # the graph itself won: for every signature
            return self.gm
        self.policy = fast.policy
        return fast.forward


def random_calls(gm: Any) -> str:
    """What in ``gm`` makes its outputs differ per call (``""``: nothing): a call that draws
    random numbers (:data:`RANDOM_CALLS`, dropout with ``training=True``) or a batch norm that
    updates its running statistics (``training=True``), named as in the graph; also modules of
    those kinds in training mode.  O(nodes)."""
    from workbench.io.torch.program import target_label

    for node in gm.graph.nodes:
        if node.op == "call_module":
            sub = gm.get_submodule(node.target)
            kind = type(sub).__name__
            if sub.training and ("Dropout" in kind or "BatchNorm" in kind):
                return f"calls {kind} in training mode ({node.name})"
            continue
        if node.op not in ("call_function", "call_method"):
            continue
        label = target_label(node)
        if label in RANDOM_CALLS:
            return f"draws random numbers ({node.name}: {label})"
        if ("dropout" in label or "batch_norm" in label) and _training_flag(node):
            return f"calls {label} in training mode ({node.name})"
    return ""


def _training_flag(node: Any) -> bool:
    """The ``training`` / ``train`` argument of a dropout or batch-norm call, defaults
    included (``F.dropout``'s is ``True``)."""
    import inspect

    for key in ("training", "train"):
        if key in node.kwargs:
            return node.kwargs[key] is True
    target = node.target
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        schema = getattr(target, "_schema", None)
        if schema is None:
            return False
        names = [a.name for a in schema.arguments]
        for key in ("training", "train"):
            if key in names:
                i = names.index(key)
                return i < len(node.args) and node.args[i] is True
        return False
    names = [p.name for p in params]
    for key in ("training", "train"):
        if key in names:
            i = names.index(key)
            if i < len(node.args):
                return node.args[i] is True
            return params[i].default is True
    return False


def register() -> None:
    """Register the backend with dynamo under :data:`NAME` (no-op when a compiler of that name
    is registered, e.g. by :mod:`~workbench.orchestration.backend_hook`)."""
    from torch._dynamo.backends import registry

    if NAME not in registry._COMPILER_FNS:
        registry.register_backend(workbench_backend, name=NAME)


__all__ = ["NAME", "RANDOM_CALLS", "CompiledGraph", "random_calls", "register",
           "workbench_backend"]
