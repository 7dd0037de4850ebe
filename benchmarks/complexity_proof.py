"""Show that the near-linear tests catch a quadratic loader on this (possibly loaded) machine.

Runs ``test_fan_in_loaders_are_near_linear`` and ``test_execution_trace_ctrl_deps_chain_is_linear``
(tests/test_hostile_scale.py) as they are, then again with a quadratic step put back:

* the graph's control-edge check deduplicating against a list (O(n) per edge);
* the Execution Trace's ctrl_deps scope walk without its memo (every walk climbs to the root).

Each line prints PASSED or the test's one-line failure with the fitted exponent.  Run from the
repository root: ``python benchmarks/complexity_proof.py`` (about 2 CPU-minutes).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tests.test_hostile_scale as scale_tests  # noqa: E402
from workbench.io.traces import et_autograd  # noqa: E402
from workbench.values import graph as graph_module  # noqa: E402

_check_control = graph_module.Graph._check_control


def _quadratic_check(self: Any, edges: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for edge in _check_control(self, edges):
        if edge not in out:          # a list, not a set: O(n) per edge
            out.append(edge)
    return out


def _quadratic_scope(nodes: Mapping[int, Mapping[str, Any]], label: Callable[[str], Any],
                     default: Any) -> dict[int, Any]:
    out = {}
    for start in nodes:              # no memo: every walk climbs the whole chain
        cur, result, seen = start, default, set()
        while isinstance(cur, int) and not isinstance(cur, bool) and cur in nodes \
                and cur not in seen:
            own = label(str(nodes[cur].get("name", "")))
            if own is not None:
                result = own
                break
            seen.add(cur)
            cur = nodes[cur].get("ctrl_deps")
        out[start] = result
    return out


def _run(name: str, test: Callable[[], None]) -> None:
    try:
        test()
        print(f"{name}: PASSED")
    except AssertionError as exc:
        print(f"{name}: FAILED: {str(exc).splitlines()[0]}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        def et_test() -> None:
            scale_tests.test_execution_trace_ctrl_deps_chain_is_linear(Path(tmp))

        _run("fan-in loaders, as they are", scale_tests.test_fan_in_loaders_are_near_linear)
        _run("ET ctrl_deps chain, as it is", et_test)
        graph_module.Graph._check_control = _quadratic_check  # type: ignore[method-assign]
        _run("fan-in loaders, control edges deduplicated in a list",
             scale_tests.test_fan_in_loaders_are_near_linear)
        graph_module.Graph._check_control = _check_control  # type: ignore[method-assign]
        original = et_autograd.nearest_scope
        for module in list(sys.modules.values()):
            if getattr(module, "nearest_scope", None) is original:
                module.nearest_scope = _quadratic_scope  # type: ignore[union-attr]
        _run("ET ctrl_deps chain, scope walk without its memo", et_test)


if __name__ == "__main__":
    main()
