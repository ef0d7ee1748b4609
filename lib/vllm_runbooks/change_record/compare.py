"""Before/after: what changed between a baseline run and the run after the change.

Why a separate comparison from ``runs.compare_runs`` (which lists every headline figure side by
side): an approver needs the *differences that matter*, each flagged when it argues against the
change — a verdict that got worse, p95 TTFT/ITL beyond a threshold, a new error class in the
logs, a tool-accuracy drop — and the environment differences (driver, image digest, vLLM version)
that explain them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .model import Change
from .sources import RunView

if TYPE_CHECKING:
    from ..canary.model import StepResult
    from ..logs.diagnosis import LogDiagnosis

#: Verdicts that mean "this works"; a move away from one of them is a regression.
GOOD_VERDICTS = {
    "pass",
    "compatible",
    "compatible_minor_version",
    "compatible_forward_compat",
    "working",
    "complete",
    "ready",
    "ok",
}
#: Severities of log findings that count as an error class.
ERROR_SEVERITIES = {"critical", "error"}


@dataclass
class Thresholds:
    """How much worse counts as a regression (relative latency growth, absolute accuracy drop)."""

    latency_pct: float = 20.0
    tool_accuracy_drop: float = 0.02


def compare_views(before: RunView, after: RunView, thresholds: Thresholds | None = None) -> list[Change]:
    """Every flagged difference between two runs, environment first."""
    t = thresholds or Thresholds()
    changes: list[Change] = []
    changes += _environment(before, after)
    changes += _verdicts(before, after)
    changes += _latency(before, after, t)
    changes += _error_classes(before, after)
    changes += _tool_accuracy(before, after, t)
    return changes


def compare_dirs(before: str | Path, after: str | Path, thresholds: Thresholds | None = None) -> list[Change]:
    """``compare_views`` on two run directories (refuses, naming the file, when one is unreadable)."""
    return compare_views(RunView.load(before), RunView.load(after), thresholds)


def environment(view: RunView) -> dict[str, Any]:
    """Driver, image digest and vLLM version of a run, from runbook 01's evidence and 03's canary."""
    env: dict[str, Any] = {"driver": None, "image_digest": None, "vllm": None}
    figures = view.key_figures("evidence_capture")  # from the typed Evidence's own headline
    env["driver"] = figures.get("driver")
    env["vllm"] = figures.get("vllm")
    evidence, _ = view.evidence()
    if evidence is not None:
        env["image_digest"] = evidence.get("image", "digest")
        env["driver"] = env["driver"] or evidence.get("nvidia", "driver_version")
    step = canary_steps(view).get("model_load")
    served = step.details.get("version") if step is not None else None
    if not served and step is not None and '"version": "' in step.evidence:
        served = step.evidence.split('"version": "', 1)[1].split('"', 1)[0]
    if served:
        env["vllm_served"] = served
    return env


def canary_steps(view: RunView) -> dict[str, StepResult]:
    """Runbook 03's typed steps by name, from its report ({} when it left none)."""
    report = view.result("canary_validation")
    return {s.step: s for s in report.steps} if report is not None else {}


def _diagnoses(view: RunView) -> list[LogDiagnosis]:
    """Runbook 02's per-log diagnoses, from its typed result ([] when it left none)."""
    result = view.result("compatibility_decision")
    return list(result.logs.items) if result is not None else []


def log_label_lines(view: RunView) -> dict[str, list[dict[str, Any]]]:
    """Each failing log label of runbook 02 with the lines it rests on: the error and critical
    findings of a signature, and the lines a learned label was scored from (role ``scored``)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for item in _diagnoses(view):
        for finding in item.findings:
            if finding.severity in ERROR_SEVERITIES and finding.label:
                line = {"line": finding.line, "text": finding.text, "how": "signature"}
                found.setdefault(finding.label, []).append(line)
        if item.scorer.get("names_cause") and item.label:
            lines = [e for e in item.evidence if isinstance(e, dict) and e.get("role") == "scored"]
            found.setdefault(item.label, []).extend(
                {"line": e.get("line"), "text": e.get("text"), "how": "learned scorer (likely)"} for e in lines
            )
    return found


def log_failures(view: RunView) -> set[str]:
    """Labels of error and critical log findings in runbook 02's diagnosis (its newest attempt),
    and the causes its learned scorer named."""
    return set(log_label_lines(view))


def error_classes(view: RunView) -> set[str]:
    """Labels of error and critical log findings (runbook 02's diagnosis), failed canary steps and
    runbook 05's request error classes."""
    found = log_failures(view)
    for name, step in canary_steps(view).items():
        if step.status == "fail":
            found.add(f"canary:{name}")
    load = view.result("load_check")
    if load is not None:
        found.update(f"load:{k}" for k, v in load.error_classes().items() if v)
    return found


def latencies(view: RunView) -> dict[str, float]:
    """p95 (or median where only that exists) TTFT / ITL figures in seconds, by source."""
    out: dict[str, float] = {}
    for name in view.entries:
        for key, value in view.key_figures(name).items():
            low = key.lower()
            measured = "slo" not in low and "limit" not in low  # a threshold echoed in the figures is not a latency
            if measured and ("ttft" in low or "itl" in low or "inter_token" in low) and _number(value) is not None:
                out[f"{name}.{key}"] = float(value)
    for name, step in canary_steps(view).items():
        for key, value in step.timings.items():
            if "ttft" in key and _number(value) is not None:
                out[f"canary_validation.{name}.{key}"] = float(value)
    return out


def tool_accuracy(view: RunView) -> float | None:
    """Runbook 03's tool-call schema accuracy (valid calls / calls checked), None when not measured."""
    step = canary_steps(view).get("tool_calling")
    acc = step.details.get("accuracy") if step is not None else None
    if isinstance(acc, dict):
        if _number(acc.get("schema_accuracy")) is not None:
            return float(acc["schema_accuracy"])
        valid, total = acc.get("valid_calls"), acc.get("calls")
        if _number(valid) is not None and _number(total):
            return float(valid) / float(total)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _environment(before: RunView, after: RunView) -> list[Change]:
    b, a = environment(before), environment(after)
    out = []
    for key in sorted(set(b) | set(a)):
        if b.get(key) != a.get(key) and (b.get(key) is not None or a.get(key) is not None):
            out.append(Change("environment", "evidence_capture", key, b.get(key), a.get(key), False))
    return out


def _verdicts(before: RunView, after: RunView) -> list[Change]:
    out = []
    for name in [n for n in before.entries if n in after.entries and n != "change_record"]:
        b, a = before.entries[name], after.entries[name]
        if b.status != a.status:
            out.append(Change("status", name, "status", b.status, a.status, a.status != "ok"))
        bv, av = before.verdict(name), after.verdict(name)
        if bv != av:
            worse = bv in GOOD_VERDICTS and av not in GOOD_VERDICTS
            note = "got worse" if worse else ("fixed" if av in GOOD_VERDICTS else "changed")
            out.append(Change("verdict", name, "verdict", bv, av, worse, note))
    return out


def _latency(before: RunView, after: RunView, t: Thresholds) -> list[Change]:
    b, a = latencies(before), latencies(after)
    out = []
    for key in sorted(set(b) & set(a)):
        if b[key] > 0:
            growth = (a[key] - b[key]) / b[key] * 100
            regression = growth > t.latency_pct
            if regression or abs(growth) >= 1:
                runbook, _, item = key.partition(".")
                note = f"{growth:+.0f}% (threshold +{t.latency_pct:g}%)"
                out.append(Change("latency", runbook, item, b[key], a[key], regression, note))
    return out


def _error_classes(before: RunView, after: RunView) -> list[Change]:
    b, a = error_classes(before), error_classes(after)
    out = [Change("error_class", "logs", label, None, "present", True, "new error class") for label in sorted(a - b)]
    out += [Change("error_class", "logs", label, "present", None, False, "gone") for label in sorted(b - a)]
    return out


def _tool_accuracy(before: RunView, after: RunView, t: Thresholds) -> list[Change]:
    b, a = tool_accuracy(before), tool_accuracy(after)
    if b is None or a is None or a == b:
        return []
    drop = b - a
    return [
        Change(
            "tool_accuracy",
            "canary_validation",
            "tool-call schema accuracy",
            round(b, 4),
            round(a, 4),
            drop > t.tool_accuracy_drop,
            f"{-drop:+.3f} (threshold -{t.tool_accuracy_drop:g})",
        )
    ]
