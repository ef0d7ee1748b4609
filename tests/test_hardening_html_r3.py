"""Hardening round 3: one hostile string through every ``_repr_html_`` of the library.

Every result a runbook shows renders itself as HTML, and its strings come from endpoints, logs,
bundles and parameters. A class that interpolates one of them raw lets a server run script in
the shared HTML copies. The builder below fills every field of every dataclass result with the
hostile string (recursively, through lists, dicts and nested records), so a new field rendered
raw fails here without anyone writing a test for it.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import pkgutil
import types
import typing
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import vllm_runbooks

HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>\"'><svg onload=alert(3)>"

#: Classes whose HTML is not built from their fields (or cannot be built from a bare instance):
#: each names why, so the exemption list cannot grow silently.
NOT_BUILT_FROM_FIELDS: dict[str, str] = {
    "vllm_runbooks.display.HtmlView": "holds HTML the display helpers built; reached through every class returning it",
    "vllm_runbooks.display.FigureGroup": "plotly's own script carries the figure JSON; covered by the chromium pass",
}

#: Free-form fields (``dict[str, Any]``) whose renderer reads numbers or nested shapes: the real
#: shape, with the hostile string wherever a string goes.
FIELD_VALUES: dict[tuple[str, str], Any] = {
    ("GpuMemory", "gpus"): [{"index": 0, "name": HOSTILE, "used_mib": 1.0, "total_mib": 2.0}],
    ("LogsView", "files"): [
        {
            "name": HOSTILE,
            "lines": 1,
            "bytes": 1,
            "stored_as": HOSTILE,
            "truncated": True,
            "first_errors": [{"line": 1, "text": HOSTILE}],
        }
    ],
    ("RunbookResult", "headline"): {"verdict": HOSTILE, "figures": {HOSTILE: HOSTILE}},
    ("RunResults", "results"): lambda: {HOSTILE: build_instance(_result_class("canary_validation"))},
}


def _result_class(runbook: str) -> type:
    from vllm_runbooks.stage import result_class

    return result_class(runbook)


class _ActiveMarkup(HTMLParser):
    """Collects what a browser would act on: script elements, event-handler attributes, javascript: URLs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"script", "iframe", "object", "embed"}:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.lower().startswith("on"):
                self.found.append(f"{tag} {name}=")
            if name.lower() in {"href", "src", "action", "formaction"} and value:
                if value.strip().lower().startswith(("javascript:", "data:text/html", "vbscript:")):
                    self.found.append(f"{tag} {name}={value[:30]}")


def active_markup(html_text: str) -> list[str]:
    """Script or handler markup in ``html_text`` (plotly's own inline script excepted: none is built here)."""
    parser = _ActiveMarkup()
    parser.feed(html_text)
    return parser.found


def _library_modules() -> list[types.ModuleType]:
    modules = []
    for info in pkgutil.walk_packages(vllm_runbooks.__path__, "vllm_runbooks."):
        if ".shipped" in info.name or info.name.endswith("__main__"):
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except ImportError:  # an optional extra (ray) not installed here
            continue
    return modules


def html_classes() -> list[type]:
    """Every class of the library that defines its own ``_repr_html_``."""
    found: dict[str, type] = {}
    for module in _library_modules():
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ != module.__name__:
                continue
            if "_repr_html_" in vars(obj) and not getattr(obj, "_is_protocol", False):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


class HostileMapping(dict):
    """A free-form record (``dict[str, Any]``) where every key a renderer asks for holds the hostile string."""

    def __missing__(self, key: str) -> str:
        return HOSTILE

    def get(self, key: str, default: Any = None) -> Any:  # noqa: D102 - dict's own contract
        return self[key]


def build(tp: Any, depth: int = 0) -> Any:
    """A value of type ``tp`` whose every string is :data:`HOSTILE`."""
    if depth > 6:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or tp is str or tp is object:
        return HOSTILE
    if tp is bool:
        return True
    if tp is int:
        return 1
    if tp is float:
        return 1.5
    if tp is Path:
        return Path(HOSTILE)
    if origin in (types.UnionType, typing.Union):
        choices = [a for a in args if a is not type(None)]
        for a in choices:  # prefer a record or container over a bare string: more fields reached
            if dataclasses.is_dataclass(a) or typing.get_origin(a) in (list, dict, tuple):
                return build(a, depth + 1)
        return build(choices[0], depth + 1) if choices else None
    if origin is typing.Literal:
        return args[0]
    if origin in (list, typing.Sequence, set, frozenset) or tp in (list,):
        inner = args[0] if args else str
        value = build(inner, depth + 1)
        return [value] if origin is not frozenset else frozenset([value])
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return (build(args[0], depth + 1),)
        return tuple(build(a, depth + 1) for a in args)
    if origin in (dict, typing.Mapping) or tp is dict:
        value_type = args[1] if len(args) == 2 else Any
        if value_type in (Any, object, str):
            return HostileMapping({HOSTILE: HOSTILE})
        return {HOSTILE: build(value_type, depth + 1)}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return next(iter(tp))
    if dataclasses.is_dataclass(tp):
        return build_instance(tp, depth + 1)
    return None


def build_instance(cls: type, depth: int = 0) -> Any:
    """An instance of ``cls`` (a dataclass, or a view taking typed arguments) with every string hostile."""
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    else:
        hints = typing.get_type_hints(cls.__init__)
        names = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
    values = {n: FIELD_VALUES.get((cls.__name__, n), None) for n in names}
    values = {n: v() if callable(v) else v for n, v in values.items()}
    return cls(**{n: v if v is not None else build(hints.get(n, Any), depth) for n, v in values.items()})


CLASSES = html_classes()


def test_every_html_class_is_found() -> None:
    """The discovery itself can fail: the results of every runbook must be among the classes."""
    names = {c.__qualname__ for c in CLASSES}
    for expected in (
        "RetentionResult",
        "ExperimentResult",
        "CompatResult",
        "DecisionInputs",
        "CanaryReport",
        "LoadCheckResult",
        "ChangeRecord",
        "FleetResult",
        "History",
        "Evidence",
        "LogDiagnosis",
    ):
        assert expected in names
    assert len(CLASSES) >= 40


def _class_id(cls: type) -> str:
    return f"{cls.__module__.removeprefix('vllm_runbooks.')}.{cls.__qualname__}"


def _checked(cls: type) -> bool:
    return f"{cls.__module__}.{cls.__qualname__}" not in NOT_BUILT_FROM_FIELDS


def test_the_exempt_classes_exist_and_say_why() -> None:
    """An exemption names a class that is there and says where it is covered (not a silent skip)."""
    exempt = {f"{c.__module__}.{c.__qualname__}" for c in CLASSES if not _checked(c)}
    assert exempt == set(NOT_BUILT_FROM_FIELDS) and all(len(why) > 20 for why in NOT_BUILT_FROM_FIELDS.values())


@pytest.mark.parametrize("cls", [c for c in CLASSES if _checked(c)], ids=_class_id)
def test_hostile_strings_render_inert(cls: type) -> None:
    """Whatever a server, log or bundle puts in a field is shown as text, never as markup."""
    name = f"{cls.__module__}.{cls.__qualname__}"
    instance = build_instance(cls)
    html_text = instance._repr_html_()
    assert isinstance(html_text, str) and html_text
    assert active_markup(html_text) == [], f"{name} renders hostile text as markup"


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        " javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "data:text/html,<script>",
        "java\tscript:alert(1)",
        "vbscript:x",
        "//evil.example/x",
        "http:/x",
    ],
)
def test_a_source_link_is_clickable_only_for_http(url: str) -> None:
    """A fact's source can come from a user's overrides file: only http(s) becomes an href."""
    from vllm_runbooks.display import link

    rendered = link(url, "source")
    assert "href" not in rendered and active_markup(rendered) == []
    assert 'href="https://docs.nvidia.com/x"' in link("https://docs.nvidia.com/x")
