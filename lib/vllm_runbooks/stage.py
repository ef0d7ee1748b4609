"""The stage contract: one shape for every runbook, so later stages read earlier ones the same way.

Why: runbook 06 (the change record) must read what 01–05 concluded, and a scheduler must read a
verdict without opening a notebook. When every runbook had its own shape, a reason was copied
from the wrong input (issue 9). So every runbook is built the same way:

* ``<package>/stage.py`` holds a ``Config`` record (the notebook's parameters, typed) and
  ``run(config) -> Result``. The notebook's cells are: build the config, run, show parts of the
  result, ``glue_result(result)`` and ``result.save(run_dir)`` in the last cell.
* The result is a :class:`~vllm_runbooks.records.Record` that follows :class:`StageResult`: it
  displays itself (``_repr_html_``), has ``headline() -> Headline`` (verdict from the runbook's
  fixed vocabulary and a few key figures), ``scraps()`` (plain JSON, by scrap name),
  ``save(run_dir)`` (redacted, never over an existing file) and ``load(run_dir)`` (rebuilds it from
  what ``save`` wrote). :class:`ResultMixin` gives the last three for a result saved as one JSON
  file.
* The result class is registered with :func:`register_result` (by schema name and runbook name),
  and its module is named in :data:`RESULT_MODULES` so :func:`vllm_runbooks.execution.runs.load_result`
  finds it without importing every package.

Adopting it in a new runbook package ``foo`` (runbook ``NN_foo_check``)::

    # foo/result.py
    @register_result
    @dataclass
    class FooResult(ResultMixin, Record):
        SCHEMA = "foo_result"; RUNBOOK = "foo_check"; VERDICTS = ("ok", "bad")
        ARTEFACT = "foo/result.json"
        verdict: str = "bad"
        def headline(self) -> Headline:
            return self.make_headline(self.verdict, {"requests": 3})
        def _repr_html_(self) -> str: ...

    # foo/stage.py
    @dataclass
    class Config(Record): ...
    def run(config: Config) -> FooResult: ...

and add ``"foo_check": "vllm_runbooks.foo.result"`` to :data:`RESULT_MODULES`.

This module imports only the standard library and ``records``: reading a headline or a saved
result never pulls in papermill, pandas or plotly.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from .execution.runjson import UNREAD, ArtefactError, CheckedJson, read_checked_json, sha256_file
from .records import Record, rebuild, to_jsonable

HEADLINE_SCRAP = "headline"

#: runbook name → module that defines and registers its result record (imported on demand).
RESULT_MODULES: dict[str, str] = {
    "evidence_capture": "vllm_runbooks.evidence.model",
    "compatibility_decision": "vllm_runbooks.compat.stage",
    "canary_validation": "vllm_runbooks.canary.model",
    "prefix_cache_check": "vllm_runbooks.prefix_cache.result",
    "fleet_survey": "vllm_runbooks.fleet.result",
    "validation_history": "vllm_runbooks.history.model",
    "load_check": "vllm_runbooks.load.result",
    "change_record": "vllm_runbooks.change_record.model",
}

#: schema name → result class; runbook name → result class. Filled by :func:`register_result`.
RESULTS_BY_SCHEMA: dict[str, type] = {}
RESULTS_BY_RUNBOOK: dict[str, type] = {}

R = TypeVar("R")


@dataclass
class Headline(Record):
    """What a runbook concluded, in the shape run.json, schedulers and runbook 06 read.

    ``verdict`` is one word from the runbook's fixed vocabulary (never free text, so a script can
    act on it); ``figures`` are a few plain-JSON key figures, bounded whatever the input size.
    """

    SCHEMA: ClassVar[str] = "headline"
    SCHEMA_VERSION: ClassVar[int] = 1

    runbook: str
    verdict: str
    figures: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.figures = to_jsonable(dict(self.figures or {}))

    @classmethod
    def of(cls, runbook: str, verdict: str, figures: dict[str, Any], vocabulary: tuple[str, ...]) -> Headline:
        """A headline whose verdict is checked against ``vocabulary``: a typo fails loudly here,
        not silently in a scheduler that never sees the expected word."""
        if vocabulary and verdict not in vocabulary:
            raise ValueError(f"{runbook}: verdict {verdict!r} is not one of {list(vocabulary)}")
        return cls(runbook=runbook, verdict=verdict, figures=figures)

    @classmethod
    def coerce(cls, data: Any) -> Headline | None:
        """A headline from a scrap or run.json entry, or None when it is not one.

        Tolerant on purpose: a run.json written by an older version (no ``schema`` key) still
        reads, but something without a runbook and a verdict is not passed off as a headline.
        """
        if isinstance(data, Headline):
            return data
        if not isinstance(data, dict):
            return None
        runbook, verdict = data.get("runbook"), data.get("verdict")
        if not isinstance(runbook, str) or not isinstance(verdict, str):
            return None
        figures = data.get("figures")
        return cls(runbook=runbook, verdict=verdict, figures=figures if isinstance(figures, dict) else {})

    def _repr_html_(self) -> str:
        from .display import banner, html_table

        rows = [{"figure": k, "value": v} for k, v in self.figures.items()]
        return banner(f"{self.runbook}: {self.verdict}", "", "unknown") + html_table(rows)


@runtime_checkable
class StageResult(Protocol):
    """What every runbook's result offers; the runner, ``runs.load_result`` and 06 rely on it."""

    RUNBOOK: ClassVar[str]
    VERDICTS: ClassVar[tuple[str, ...]]

    def headline(self) -> Headline:
        """The verdict and key figures (copied into run.json by the runner)."""
        ...

    def scraps(self) -> dict[str, Any]:
        """Plain JSON by scrap name, glued into the executed notebook."""
        ...

    def save(self, run_dir: str | Path | None) -> Path | None:
        """Write the result into the run directory (redacted, never over a file)."""
        ...

    def _repr_html_(self) -> str:
        """Display in Jupyter: a result cell is one name."""
        ...


def register_result(cls: type[R]) -> type[R]:
    """Class decorator: make ``cls`` findable by its schema name and its runbook name."""
    schema = getattr(cls, "SCHEMA", None)
    runbook = getattr(cls, "RUNBOOK", None)
    if not schema or not runbook:
        raise TypeError(f"{cls.__name__} needs SCHEMA and RUNBOOK to be registered as a result")
    RESULTS_BY_SCHEMA[schema] = cls
    RESULTS_BY_RUNBOOK[runbook] = cls
    return cls


def result_class(runbook_or_schema: str) -> type:
    """The registered result class of a runbook (``canary_validation``) or schema name.

    Imports the runbook's result module on first use, so reading one result never imports the
    other runbooks' packages.
    """
    key = re.sub(r"^\d\d_", "", runbook_or_schema)
    if key not in RESULTS_BY_RUNBOOK and key not in RESULTS_BY_SCHEMA and key in RESULT_MODULES:
        importlib.import_module(RESULT_MODULES[key])
    cls = RESULTS_BY_RUNBOOK.get(key) or RESULTS_BY_SCHEMA.get(key)
    if cls is None:
        known = sorted(set(RESULT_MODULES) | set(RESULTS_BY_RUNBOOK))
        raise KeyError(f"no result registered for {runbook_or_schema!r}; known runbooks: {', '.join(known)}")
    return cls


def glue_result(result: Any) -> dict[str, Any]:
    """Glue a result's scraps and, last, its typed ``headline``; the runbook's last cell calls this.

    One helper so every runbook's notebook carries the headline in the same shape, which is what
    the runner copies into run.json. Returns what was glued, by name.
    """
    from .execution.scraps import glue

    data = dict(result.scraps())
    data.pop(HEADLINE_SCRAP, None)
    data[HEADLINE_SCRAP] = result.headline().to_dict()
    for name, value in data.items():
        glue(name, value)
    return data


class ResultMixin:
    """Default ``scraps`` / ``save`` / ``load`` for a result saved as one JSON file (``ARTEFACT``).

    Mix in before :class:`~vllm_runbooks.records.Record`; set ``RUNBOOK``, ``VERDICTS`` and
    ``ARTEFACT`` and write ``headline()`` with :meth:`make_headline`.
    """

    RUNBOOK: ClassVar[str] = ""
    VERDICTS: ClassVar[tuple[str, ...]] = ()
    ARTEFACT: ClassVar[str] = ""

    def make_headline(self, verdict: str, figures: dict[str, Any]) -> Headline:
        """This runbook's headline, its verdict checked against ``VERDICTS``."""
        return Headline.of(self.RUNBOOK, verdict, figures, self.VERDICTS)

    def headline(self) -> Headline:  # pragma: no cover - every result defines its own
        """Subclasses say what they concluded."""
        raise NotImplementedError

    def scraps(self) -> dict[str, Any]:
        """The whole record under its schema name plus the headline, redacted (a notebook is shared)."""
        from .redact import redact_obj

        return redact_obj({self.SCHEMA: self.to_dict(), HEADLINE_SCRAP: self.headline().to_dict()})  # type: ignore[attr-defined]

    def save(self, run_dir: str | Path | None) -> Path | None:
        """Write the record to ``<run_dir>/<ARTEFACT>`` through ``write_artefact`` (redacted, new file)."""
        if not run_dir:
            return None
        from .artefacts import write_artefact

        return write_artefact(run_dir, self.ARTEFACT, self)

    @classmethod
    def load(cls: type[R], run_dir: str | Path) -> R:
        """Rebuild the result from ``<run_dir>/<ARTEFACT>``, refusing a changed file by name."""
        return cls.from_saved(read_checked_json(run_dir, cls.ARTEFACT, cls.SCHEMA))  # type: ignore[attr-defined]

    @classmethod
    def from_saved(cls: type[R], saved: CheckedJson) -> R:
        """The result from its checked file; a file that does not decode is refused by name.

        Nested records come back typed (``records.rebuild``) unless the class has its own
        ``from_dict``.
        """
        own = getattr(cls, "from_dict", None)
        try:
            if own is not None and getattr(own, "__func__", None) is not Record.from_dict.__func__:
                return own(saved.data)  # the result reads its own nested parts
            return rebuild(cls, saved.data)  # type: ignore[type-var]  # nested records back typed from annotations
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise ArtefactError(saved.path, f"does not read as {cls.SCHEMA} ({exc})") from exc  # type: ignore[attr-defined]


@dataclass(frozen=True)
class LoadedResult:
    """A runbook's result read back typed, with the file it came from (relative path, sha256):
    what the change record cites, so a citation names exactly the bytes that were judged."""

    runbook: str
    result: Any
    rel: str
    sha256: str


def load_result(run_dir: str | Path, runbook: str) -> Any:
    """Rebuild ``runbook``'s result from what it saved in ``run_dir`` (see ``runs.load_result``)."""
    return result_class(runbook).load(run_dir)


def read_result(
    run_dir: str | Path,
    runbook: str,
    *,
    manifest: Mapping[str, str] | None = UNREAD,
    hashed: dict[str, str] | None = None,
) -> LoadedResult:
    """:func:`load_result` with the manifest (and hash memo) a reader of a whole run already holds,
    keeping the file it read. Raises like ``load_result``."""
    cls = result_class(runbook)
    if getattr(cls, "from_saved", None) is None or "load" in vars(cls):
        # a result saved as several files (runbook 01's evidence) reads itself
        result = cls.load(run_dir, manifest=manifest, hashed=hashed)
        path = Path(run_dir) / cls.ARTEFACT
        memo = hashed if hashed is not None else {}
        digest = memo.get(str(path.resolve())) or sha256_file(path)
        return LoadedResult(cls.RUNBOOK, result, cls.ARTEFACT, digest)
    saved = read_checked_json(run_dir, cls.ARTEFACT, cls.SCHEMA, manifest=manifest, hashed=hashed)
    return LoadedResult(cls.RUNBOOK, cls.from_saved(saved), saved.rel, saved.sha256)
