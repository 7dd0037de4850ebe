"""One named registry for every extension point: policies, planners, models, devices, passes,
executors, loaders and savers (STYLE.md R2/R3).

A :class:`Registry` is an ordered name → entry table.  It does three jobs once, for every family:

* **lookups** fail with a one-line error that lists the known names and suggests the nearest one;
* **keyword options** are checked against the entry's function signature
  (:meth:`Registry.check_options`), again with a one-line error and a suggestion;
* **availability**: an entry may depend on an optional library (CuPy, onnx, torch); it is
  registered with a probe, and :meth:`Registry.available` / :meth:`Registry.unavailable_reason`
  answer without importing anything at registration time.

An entry's function is the entry itself when it is callable, its ``fn`` attribute when it has one
(the ``*Info`` dataclasses), or, for a ``"module:attribute"`` string, that attribute imported on
first use (the executors, STYLE.md R11).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, Generic, TypeVar

from workbench._checks import did_you_mean, show
from workbench.errors import WorkbenchError

T = TypeVar("T")

#: A probe: ``""`` when the entry can be used here, else one line saying why not and what to do.
Probe = Callable[[], str]


class Registry(Generic[T]):
    """An ordered name → entry table whose lookups fail with the list of known names.

    >>> r = Registry[int]("number", error=KeyError)
    >>> r.register("one", 1)
    1
    >>> r.get("one")
    1
    >>> def scale(x, *, factor=2):
    ...     return x * factor
    >>> fns = Registry[Callable]("function", error=ValueError)
    >>> _ = fns.register("scale", scale)
    >>> fns.options("scale")
    {'factor': 2}
    >>> fns.check_options("scale", {"factr": 3})
    Traceback (most recent call last):
    ...
    ValueError: function 'scale' has no option 'factr'; did you mean 'factor'? (options: factor)
    """

    def __init__(self, what: str, *, error: type[Exception] = WorkbenchError,
                 params: str = "keyword_only") -> None:
        if params not in ("keyword_only", "after_first", "all"):
            raise ValueError(f"unknown params {params!r} (known: keyword_only, after_first, all)")
        self.what = what
        self._error = error
        # which parameters are options: the keyword-only ones (policies, planners: the data comes
        # first, positionally), every one after the first (executors), or all (graph builders)
        self._params = params
        self._entries: dict[str, T] = {}
        self._probes: dict[str, Probe] = {}

    def register(self, name: str, entry: T, *, probe: Probe | None = None) -> T:
        """Add ``entry`` under ``name``; ``probe`` says whether it can be used here."""
        if name in self._entries:
            raise self._error(f"{self.what} {name!r} is registered twice")
        self._entries[name] = entry
        if probe is not None:
            self._probes[name] = probe
        return entry

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            known = ", ".join(sorted(self._entries))
            hint = did_you_mean(name, self._entries) if isinstance(name, str) else ""
            raise self._error(f"unknown {self.what} {show(name)}{hint} (known: {known})") from None

    def names(self) -> list[str]:
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    # -- availability -------------------------------------------------------------------------

    def unavailable_reason(self, name: str) -> str:
        """``""`` when the entry can be used here, else why not (one line)."""
        self.get(name)
        probe = self._probes.get(name)
        return probe() if probe is not None else ""

    def available(self, name: str) -> bool:
        return not self.unavailable_reason(name)

    def available_names(self) -> list[str]:
        return [n for n in self._entries if self.available(n)]

    # -- options ------------------------------------------------------------------------------

    def function(self, name: str) -> Callable[..., Any]:
        """The entry's function (imported now for a ``"module:attribute"`` entry)."""
        entry: Any = self.get(name)
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
        fn = getattr(entry, "fn", entry)
        if not callable(fn):
            raise TypeError(f"{self.what} {name!r} has no function")
        return fn  # type: ignore[no-any-return]

    def options(self, name: str) -> dict[str, Any] | None:
        """The entry's keyword options and their defaults (``inspect.Parameter.empty`` for a
        required one), or None when its function takes ``**options`` (anything goes)."""
        return signature_options(self.function(name), self._params)

    def check_options(self, name: str, options: Mapping[str, Any], *,
                      extra: Iterable[str] = (), label: str | None = None,
                      noun: str = "option", error: type[Exception] | None = None) -> None:
        """A one-line error naming the first key of ``options`` that the entry's function does
        not take (and the nearest one it does); ``extra`` are keys handled by the caller."""
        known = self.options(name)
        if known is None:
            return
        names = list(dict.fromkeys([*known, *extra]))
        for key in options:
            if key not in names:
                raise (error or self._error)(
                    f"{label or self.what} {name!r} has no {noun} {show(key)}"
                    f"{did_you_mean(key, names)} ({noun}s: {', '.join(names) or 'none'})")

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def signature_options(fn: Callable[..., Any], params: str = "keyword_only"
                      ) -> dict[str, Any] | None:
    """The options of ``fn`` and their defaults (``inspect.Parameter.empty`` when required), or
    None when it takes ``**options``; ``params`` as in :class:`Registry`.

    >>> def plan(records, *, alignment=1): ...
    >>> signature_options(plan)
    {'alignment': 1}
    """
    found = list(inspect.signature(fn).parameters.values())
    if any(p.kind is p.VAR_KEYWORD for p in found):
        return None
    if params == "keyword_only":
        return {p.name: p.default for p in found if p.kind is p.KEYWORD_ONLY}
    if params == "after_first":
        found = found[1:]
    return {p.name: p.default for p in found if p.kind is not p.POSITIONAL_ONLY}


def needs_module(module: str, extra: str) -> Probe:
    """A probe for an entry that needs an optional library: it looks the module up (without
    importing it) once, and otherwise says what to install.

    >>> needs_module("json", "none")()
    ''
    >>> needs_module("no_such_module_x", "x")()
    "no_such_module_x is not installed; pip install 'schedule-workbench[x]'"
    """

    @lru_cache(maxsize=1)
    def probe() -> str:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        return "" if found else (f"{module} is not installed; "
                                 f"pip install 'schedule-workbench[{extra}]'")

    return probe


__all__ = ["Probe", "Registry", "needs_module", "signature_options"]
