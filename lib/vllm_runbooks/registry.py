"""The one registry for the parts of the procedure that grow: evidence collectors, canary steps, load stages.

Why one class: each of the three had its own dict, its own sorted list and its own discovery, and
a second registration under a taken name silently replaced the first, so a plug-in could hide a
built-in check without anyone noticing. Here a name is taken once: registering another part under
it raises :class:`DuplicateName`, naming both. Re-running the *same* definition (a module imported
twice under the same name, an ``importlib.reload``) is not a duplicate; it replaces itself.

A registry knows its package (``discover`` imports every module in it once, so their decorators
run) and orders its parts by ``order``. The part classes stay with their packages: a collector,
a step and a stage need different fields; what they share is a ``name``, an ``order`` and ``fn``.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any, Generic, Protocol, TypeVar


class Part(Protocol):
    """What a registered part has: a unique name, a place in the order, and its function."""

    name: str
    order: float
    fn: Any


P = TypeVar("P", bound=Part)


class DuplicateName(ValueError):
    """A second part under a name that is taken: refused, so nothing is replaced unseen."""


def _origin(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


class Registry(Generic[P]):
    """Named parts of one kind, refusing duplicates, found in ``package`` and listed in order."""

    def __init__(self, kind: str, package: str | None = None) -> None:
        self.kind = kind
        self.package = package
        self._parts: dict[str, P] = {}
        self._discovered = False

    def add(self, part: P) -> P:
        """Register ``part``; ``DuplicateName`` when its name is taken by another definition."""
        old = self._parts.get(part.name)
        if old is not None and _origin(old.fn) != _origin(part.fn):
            raise DuplicateName(
                f"{self.kind} {part.name!r} is registered already (by {_origin(old.fn)}); "
                f"{_origin(part.fn)} must use another name"
            )
        self._parts[part.name] = part
        return part

    def discover(self) -> dict[str, P]:
        """Import every module of the package once, so their registrations run; the parts by name."""
        if self.package and not self._discovered:
            pkg = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(pkg.__path__):
                importlib.import_module(f"{self.package}.{info.name}")
            self._discovered = True
        return dict(self._parts)

    def ordered(self) -> list[P]:
        """Every part (after discovery), in procedure order."""
        return sorted(self.discover().values(), key=lambda p: p.order)

    def get(self, name: str) -> P | None:
        """The part registered under ``name`` (after discovery), or None."""
        return self.discover().get(name)

    def remove(self, name: str) -> None:
        """Take a part out (a test's own part, after the test)."""
        self._parts.pop(name, None)

    def __getitem__(self, name: str) -> P:
        return self._parts[name]

    def __contains__(self, name: object) -> bool:
        return name in self._parts

    @contextlib.contextmanager
    def temporarily(self, part: P) -> Iterator[P]:
        """Register ``part`` for the ``with`` block only (a test's own step), then remove it."""
        self.add(part)
        try:
            yield part
        finally:
            self._parts.pop(part.name, None)
