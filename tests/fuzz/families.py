"""Every fuzz family in one table: the input kinds of :mod:`tests.fuzz.cases` (issue 27) and
the families added for issue 34 (attribute extremes, huge integers, corrupt Execution Traces,
hostile paths, writers, nested control flow, round trips, option combinations) and for issue 43
(side-effect schedules, ONNX external data and structure, data-dependent torch modules, hostile
names under an ASCII terminal: :mod:`tests.fuzz.cases_round3`; the scale inputs:
:mod:`tests.fuzz.cases_scale`).

:func:`generate` draws ``n`` cases with one ``random.Random(seed)``, each family by its weight;
:func:`sample` draws ``k`` cases of every family (the CI part).  Both are reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tests.fuzz import (
    cases,
    cases_attrs,
    cases_nested,
    cases_options,
    cases_paths,
    cases_readers,
    cases_round3,
    cases_scale,
)
from tests.fuzz.runner import Case

GENERATORS: dict[str, Callable[[random.Random, int], Case]] = {
    **cases.GENERATORS,
    "attrs": cases_attrs.attrs, "huge_int": cases_readers.huge_int,
    "corrupt_et": cases_readers.corrupt_et, "paths": cases_paths.paths,
    "writer": cases_paths.writer, "nested": cases_nested.nested,
    "roundtrip": cases_nested.roundtrip, "options": cases_options.options,
    **cases_round3.GENERATORS, **cases_scale.GENERATORS,
}
FAMILIES = tuple(GENERATORS)
#: Share of each family in a run: the old families as in :data:`cases.WEIGHTS`, the new ones
#: lighter where each case runs a whole comparison (paths, writer, options, nested).
WEIGHTS: dict[str, int] = {**dict(zip(cases.FAMILIES, cases.WEIGHTS, strict=True)),
                           "attrs": 14, "huge_int": 12, "corrupt_et": 8, "paths": 8,
                           "writer": 8, "nested": 6, "roundtrip": 12, "options": 10,
                           "side_effects": 8, "onnx_data": 10, "data_dependent": 6, "text": 3,
                           "scale": 6}


def generate(n: int, seed: int = 34, *, scale: int = 1,
             families: tuple[str, ...] = FAMILIES) -> list[Case]:
    """``n`` cases drawn with ``random.Random(seed)``, the families by :data:`WEIGHTS`."""
    rng = random.Random(seed)
    names = [f for f in FAMILIES if f in families]
    weights = [WEIGHTS[f] for f in names]
    return [GENERATORS[rng.choices(names, weights)[0]](rng, scale) for _ in range(n)]


def sample(k: int, seed: int = 34, *, families: tuple[str, ...] = FAMILIES) -> list[Case]:
    """``k`` cases of every family in ``families`` (family by family), ``random.Random(seed)``
    per family so that adding a family leaves the others' cases as they were."""
    out: list[Case] = []
    for family in families:
        rng = random.Random(f"{seed}/{family}")
        out += [GENERATORS[family](rng, 1) for _ in range(k)]
    return out
