"""A small named registry used for policies, planners, models and devices (STYLE.md R2)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from workbench._checks import did_you_mean, show
from workbench.errors import WorkbenchError

T = TypeVar("T")


class Registry(Generic[T]):
    """An ordered name → entry table whose lookups fail with the list of known names.

    >>> r = Registry[int]("number", error=KeyError)
    >>> r.register("one", 1)
    1
    >>> r.get("one")
    1
    """

    def __init__(self, what: str, *, error: type[Exception] = WorkbenchError) -> None:
        self.what = what
        self._error = error
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise self._error(f"{self.what} {name!r} is registered twice")
        self._entries[name] = entry
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

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
