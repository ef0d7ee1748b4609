"""JUnit XML for scheduled validations, so Jenkins, GitLab and GitHub Actions show them natively.

A scheduler that runs a runbook every night wants the result where its test reports already are.
Each runbook becomes a ``<testsuite>``; inside it, one ``<testcase>`` per check:

* ``execution`` — an ``<error>`` when a cell raised (the notebook is saved all the same) or the
  run was refused; ``<skipped>`` when ``suite`` did not run it (the reason is the message);
* ``verdict`` — a ``<failure>`` when the verdict is one the schedule does not accept
  (``--fail-on-verdict``), or when the runbook recorded no verdict at all;
* one per step the headline reports (figures ``steps`` / ``stages`` / ``checks``: a mapping of
  name → status): ``pass``-like statuses pass, ``fail``-like ones fail, ``skip`` is skipped.

Test-case names are stable across runs (the verdict goes in the message and the properties), so
a CI's per-test history lines up night after night. Text is redacted, stripped of characters XML
cannot hold (lone surrogates included), and bounded.

The report is written whatever happens (:func:`always_written`): a run refused, or one that
crashed, is a red ``execution`` case saying why, never a missing file the scheduler reads as
nothing to report.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..redact import redact_text

#: headline figures holding a mapping of step/stage/check name → status
STEP_FIGURES = ("steps", "stages", "checks")
PASSED = frozenset({"pass", "passed", "ok", "working", "complete"})
SKIPPED = frozenset({"skip", "skipped", "not_applicable", "n/a"})
FAILED = frozenset({"fail", "failed", "failure", "error"})
MAX_TEXT = 4000
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # a non-UTF-8 path or argument, as Python reads it


def _text(value: Any) -> str:
    return _XML_ILLEGAL.sub("?", _SURROGATE.sub("\ufffd", redact_text(str(value))))[:MAX_TEXT]


def _time(seconds: Any) -> str:
    try:
        return f"{max(0.0, float(seconds)):.3f}"
    except (TypeError, ValueError):
        return "0.000"


def _as_dict(result: Any) -> dict[str, Any]:
    return result.to_dict() if hasattr(result, "to_dict") else dict(result)


def _case(suite: ET.Element, classname: str, name: str, seconds: Any = 0) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time=_time(seconds))


def _mark(case: ET.Element, kind: str, message: str, detail: str | None = None) -> None:
    element = ET.SubElement(case, kind, message=_text(message))
    if kind != "skipped":
        element.set("type", "verdict" if case.get("name") == "verdict" else case.get("name", "check"))
    if detail:
        element.text = _text(detail)


def runbook_suite(result: Any, fail_on_verdict: Iterable[str] = ()) -> ET.Element:
    """One ``<testsuite>`` for a runbook result (a RunbookResult or its run.json entry)."""
    data = _as_dict(result)
    name = str(data.get("name") or "runbook")
    classname = f"vllm_runbooks.{name}"
    headline = data.get("headline") or {}
    figures = headline.get("figures") if isinstance(headline.get("figures"), dict) else {}
    verdict = headline.get("verdict")
    suite = ET.Element("testsuite", name=name)
    if data.get("started_at"):  # ISO 8601 without the zone, the form Jenkins' schema asks for
        suite.set("timestamp", str(data["started_at"])[:19])
    suite.set("hostname", socket.gethostname())
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("verdict", verdict),
        ("status", data.get("status")),
        ("run_dir", data.get("run_dir")),
        ("notebook", data.get("notebook")),
        ("html", data.get("html")),
    ):
        if value is not None:
            ET.SubElement(props, "property", name=key, value=_text(value))

    execution = _case(suite, classname, "execution", data.get("duration_s"))
    if data.get("status") == "skipped":  # the suite did not run it, and said why: not a red test
        _mark(execution, "skipped", data.get("error") or "not run")
        _mark(_case(suite, classname, "verdict"), "skipped", "not run")
        _count(suite)
        return suite
    if data.get("status") != "ok":
        _mark(execution, "error", data.get("error") or "the runbook did not finish", data.get("notebook"))

    case = _case(suite, classname, "verdict")
    refused = set(fail_on_verdict)
    if verdict is None:
        _mark(case, "failure", "no verdict recorded (see the executed notebook)", data.get("notebook"))
    elif verdict in refused:
        _mark(case, "failure", f"verdict {verdict!r} is one of --fail-on-verdict {sorted(refused)}")
    else:
        ET.SubElement(case, "system-out").text = _text(f"verdict: {verdict}")

    timings = figures.get("latency_s") if isinstance(figures.get("latency_s"), dict) else {}
    for key in STEP_FIGURES:
        steps = figures.get(key)
        if not isinstance(steps, dict):
            continue
        for step, status in steps.items():
            case = _case(suite, classname, f"{key[:-1]} {step}", timings.get(step, 0))
            word = str(status.get("status") if isinstance(status, dict) else status).lower()
            if word in PASSED:
                continue
            if word in SKIPPED:
                _mark(case, "skipped", f"{step}: {word}")
            elif word in FAILED:  # the reason is in the notebook, which the failure points to
                _mark(case, "failure", f"{step}: {word}", f"see {data.get('html') or data.get('notebook')}")
            else:  # an unknown status is never passed off as a pass
                _mark(case, "skipped", f"{step}: status {word!r}")
    _count(suite)
    return suite


def _count(element: ET.Element) -> None:
    cases = element.iter("testcase")
    tallies = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total = 0.0
    for case in cases:
        tallies["tests"] += 1
        total += float(case.get("time") or 0)
        for kind, key in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            tallies[key] += case.find(kind) is not None
    for key, value in tallies.items():
        element.set(key, str(value))
    element.set("time", _time(total))


def junit_document(results: Sequence[Any], fail_on_verdict: Iterable[str] = (), name: str = "vllm-runbooks") -> str:
    """The whole report: ``<testsuites>`` with one suite per runbook, as an XML string."""
    refused = list(fail_on_verdict)
    root = ET.Element("testsuites", name=_text(name))
    for result in results:
        root.append(runbook_suite(result, refused))
    _count(root)
    for element in root.iter():  # names come from run.json and the command line, unchecked
        for key, value in element.attrib.items():
            element.set(key, _XML_ILLEGAL.sub("?", _SURROGATE.sub("\ufffd", value)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(
    path: str | Path, results: Sequence[Any], fail_on_verdict: Iterable[str] = (), name: str = "vllm-runbooks"
) -> Path:
    """Write the report atomically (a CI never reads half a file); the path is the scheduler's to choose."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(junit_document(results, fail_on_verdict, name), encoding="utf-8")
    tmp.replace(target)
    return target


def failure_entry(name: str, exc: BaseException) -> dict[str, Any]:
    """The JUnit entry of a run that ended in ``exc``: refused (a RunbookError, an unknown
    runbook), interrupted, or crashed, with the reason as the message."""
    from .parameters import RunbookError

    if isinstance(exc, RunbookError | FileNotFoundError):
        return {"name": name, "status": "refused", "error": str(exc)}
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return {"name": name, "status": "interrupted", "error": f"interrupted ({type(exc).__name__})"}
    return {"name": name, "status": "crashed", "error": f"crashed: {type(exc).__name__}: {exc}"}


@contextlib.contextmanager
def always_written(path: str | Path | None, name: str, fail_on_verdict: Iterable[str] = ()) -> Iterator[list[Any]]:
    """Write the JUnit report at ``path`` when the block ends, however it ends.

    The block appends its results to the list it is given. When it raises, the report is one
    ``execution`` error for ``name`` saying why (:func:`failure_entry`) and the exception goes
    on; a report that cannot be written then is said on stderr, never raised over it. When it
    returns without results, the report says so rather than passing an empty run.
    """
    results: list[Any] = []
    try:
        yield results
    except BaseException as exc:
        if path:
            try:
                write_junit(path, [failure_entry(name, exc)], fail_on_verdict)
            except Exception as junit_exc:  # noqa: BLE001 - never hide why the run ended
                print(f"vllm-runbooks: could not write the JUnit report {path}: {junit_exc}", file=sys.stderr)
        raise
    if path:
        write_junit(path, results or [{"name": name, "status": "failed", "error": "no result"}], fail_on_verdict)
