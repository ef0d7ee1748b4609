"""Runbook 02's stage: evidence (or parameters) → log diagnosis → compatibility report.

Joins the two independent parts — the log classifier and the compatibility decision — so the
notebook stays one call per step, and so tests and schedulers get the same answer without
Jupyter. Parameters given explicitly override what runbook 01 recorded, and say so.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import shlex
from pathlib import Path
from typing import Any

from .compat import CompatInputs, CompatReport, OrgConstraints, check, inputs_from_evidence
from .logs import LogDiagnoses, diagnose_logs
from .records import Record

#: runbook parameter → CompatInputs field it overrides.
OVERRIDES = {
    "image_cuda": "image_cuda_version",
    "driver_version": "driver_version",
    "gpu_name": "gpu_name",
    "compute_capability": "compute_capability",
    "brand": "brand_class",
    "compat_libs": "compat_libs",
    "nvidia_require_cuda": "nvidia_require_cuda",
    "gpu_count": "gpu_count",
}


@dataclasses.dataclass
class DecisionInputs(Record):
    """Where runbook 02's inputs came from: the evidence file used, overrides, logs to read."""

    SCHEMA = "decision_inputs"

    evidence_path: str | None
    evidence_note: str
    inputs: CompatInputs
    overrides: dict[str, Any]
    log_paths: list[str]

    def _repr_html_(self) -> str:
        from .display import html_table

        rows = [
            {
                "input": f.name,
                "value": _shown(getattr(self.inputs, f.name)),
                "from": "parameter"
                if f.name in self.overrides.values()
                else self.inputs.sources.get(f.name) or self.inputs.derived.get(f.name),
            }
            for f in dataclasses.fields(self.inputs)
            if f.name not in ("sources", "derived", "launch_env", "nccl_env")
        ]
        head = f"<p><b>Evidence:</b> {self.evidence_path or '—'} ({self.evidence_note})</p>"
        logs = "<p><b>Logs:</b> " + (", ".join(self.log_paths) or "none") + "</p>"
        return head + logs + html_table(rows, ["input", "value", "from"])


def _shown(value: Any) -> Any:
    """A launch command reads best as one shell line, not a column of words."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return shlex.join(value)
    return value


def find_evidence(evidence_dir: str | Path | None) -> Path | None:
    """``<dir>/evidence/evidence.json``, or the file itself; None when absent."""
    if not evidence_dir:
        return None
    path = Path(evidence_dir)
    candidate = path if path.is_file() else path / "evidence" / "evidence.json"
    return candidate if candidate.is_file() else None


def gather_inputs(
    evidence_dir: str | Path | None = None,
    *,
    log_paths: list[str] | None = None,
    profile: str | None = None,
    **overrides: Any,
) -> DecisionInputs:
    """Evidence from runbook 01 when present, then explicit parameters on top."""
    import json

    unknown = set(overrides) - set(OVERRIDES)
    if unknown:
        raise TypeError(f"unknown decision inputs: {sorted(unknown)}")
    evidence_file = find_evidence(evidence_dir)
    evidence: dict[str, Any] = {}
    note = "no evidence directory given"
    if evidence_file:
        try:
            evidence = json.loads(evidence_file.read_text(encoding="utf-8"))
            note = f"runbook 01 evidence, collected {evidence.get('collected_at', '?')} from {evidence.get('source')}"
        except (OSError, ValueError) as exc:
            note = f"evidence file unreadable: {exc}"
    elif evidence_dir:
        note = f"no evidence/evidence.json under {evidence_dir}"
    if evidence:
        inputs = inputs_from_evidence(evidence, profile)
    else:
        inputs = CompatInputs(model_profile=profile or "generic_vllm")
    applied: dict[str, Any] = {}
    for param, value in overrides.items():
        if value is None or value == "":
            continue
        field = OVERRIDES[param]
        setattr(
            inputs,
            field,
            str(value) if field in ("image_cuda_version", "driver_version", "compute_capability") else value,
        )
        inputs.sources[field] = f"parameter {param}"
        applied[param] = field
    inputs.fill_derived()
    logs = list(log_paths or [])
    if evidence_file:
        logs = _evidence_logs(evidence, evidence_file.parent) + logs
    return DecisionInputs(
        evidence_path=str(evidence_file) if evidence_file else None,
        evidence_note=note,
        inputs=inputs,
        overrides=applied,
        log_paths=logs,
    )


def _evidence_logs(evidence: dict[str, Any], evidence_root: Path) -> list[str]:
    item = (evidence.get("items") or {}).get("logs") or {}
    files = (item.get("value") or {}).get("files") or []
    paths = []
    for entry in files:
        stored = entry.get("stored_as") if isinstance(entry, dict) else None
        if stored:
            paths.append(str(evidence_root / stored))
    return paths


@dataclasses.dataclass
class DecisionResult(Record):
    """Runbook 02's outcome: what the logs say, what the decision is, and what to do."""

    SCHEMA = "decision_result"

    gathered: DecisionInputs
    logs: LogDiagnoses
    report: CompatReport

    @property
    def verdict(self) -> str:
        return self.report.verdict

    def headline(self) -> dict[str, Any]:
        head = self.report.headline()
        return {
            "runbook": "compatibility_decision",
            "verdict": head.pop("verdict"),
            "figures": {**head, "log_label": self.logs.label, "logs_read": len(self.logs)},
        }


def log_findings(logs: LogDiagnoses) -> list[dict[str, Any]]:
    """The classifier's findings in the plain form the decision cross-checks against."""
    return [
        {"label": f.label, "line": f.line, "text": f.text, "source": d.source}
        for d in logs
        for f in d.findings
        if f.label != "unrecognized_error"  # unexplained errors cannot confirm or contradict a verdict
    ]


def decide_from(
    gathered: DecisionInputs,
    constraints: OrgConstraints | dict[str, Any] | None = None,
    *,
    want_prefix_caching: bool | None = None,
    today: _dt.date | None = None,
) -> DecisionResult:
    logs = diagnose_logs(gathered.log_paths) if gathered.log_paths else LogDiagnoses()
    report = check(
        gathered.inputs,
        log_findings=log_findings(logs),
        constraints=constraints,
        want_prefix_caching=want_prefix_caching,
        today=today,
    )
    return DecisionResult(gathered=gathered, logs=logs, report=report)


def remediation_controls(result: DecisionResult, constraints: OrgConstraints) -> Any:
    """ipywidgets toggles that re-run the recommendation live (interactive use in JupyterLab)."""
    import ipywidgets as widgets
    from IPython.display import HTML, display

    from .compat import recommend

    toggles = {
        f.name: widgets.Checkbox(
            value=bool(getattr(constraints, f.name)),
            description=f.name.replace("_", " "),
            layout=widgets.Layout(width="420px"),
        )
        for f in dataclasses.fields(constraints)
        if isinstance(getattr(constraints, f.name), bool)
    }
    deadline = widgets.FloatText(value=constraints.recovery_deadline_hours or 0.0, description="deadline (h, 0 = none)")
    out = widgets.Output()

    def refresh(_: Any = None) -> None:
        chosen = dataclasses.replace(
            constraints,
            **{k: w.value for k, w in toggles.items()},
            recovery_deadline_hours=deadline.value or None,
        )
        with out:
            out.clear_output()
            display(HTML(recommend(result.report.decision, chosen, lint=result.report.lint)._repr_html_()))

    for w in [*toggles.values(), deadline]:
        w.observe(refresh, names="value")
    refresh()
    return widgets.VBox([*toggles.values(), deadline, out])


def log_timelines(result: DecisionResult) -> list[Any]:
    """One findings-by-line figure per log that has findings."""
    return [d.timeline() for d in result.logs if d.findings]
