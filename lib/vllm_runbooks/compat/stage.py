"""Runbook 02's stage: evidence (or parameters) → log diagnosis → compatibility report, saved.

Why here: runbook 02 is the compat package's runbook, so its config, its run and its result
live beside the decision they wrap. The notebook is "build ``Config``, ``run``, show parts of
the result, glue"; the CLI's ``check-compat`` reads inputs through the same
:func:`~vllm_runbooks.compat.inputs.build_inputs`, so both give the same decision and reasons.
The result is saved as ``compat/decision.json`` and read back with
``runs.load_result(run_dir, "compatibility_decision")``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import shlex
from pathlib import Path
from typing import Any, ClassVar

from ..display import Figures
from ..logs.diagnosis import LogDiagnoses
from ..records import Record, check_schema_version
from ..stage import Headline, ResultMixin, register_result
from .decide import VERDICTS
from .inputs import CompatInputs, build_inputs
from .remediate import OrgConstraints
from .report import CompatReport

#: runbook parameter → CompatInputs field it overrides (the CLI's flags map to the same fields).
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
DECISION_FILE = "compat/decision.json"


@dataclasses.dataclass
class Config(Record):
    """Runbook 02's parameters, typed (the notebook's parameters cell documents each one)."""

    SCHEMA = "compat_config"

    run_dir: str | None = None
    evidence_dir: str | None = None
    image_cuda: str | None = None
    driver_version: str | None = None
    gpu_name: str | None = None
    compute_capability: str | None = None
    brand: str | None = None
    compat_libs: bool | None = None
    nvidia_require_cuda: str | None = None
    gpu_count: int | None = None
    log_paths: list[str] = dataclasses.field(default_factory=list)
    profile: str | None = None
    want_prefix_caching: bool | None = None
    maintenance_window_available: bool = False
    shared_nodes_can_stop: bool = False
    can_maintain_custom_build: bool = False
    isolated_environment_available: bool = False
    recovery_deadline_hours: float | None = None
    today: str | None = None  # YYYY-MM-DD; None: today (UTC)

    def overrides(self) -> dict[str, Any]:
        """The given inputs, keyed by the CompatInputs field they override."""
        return {field: getattr(self, param) for param, field in OVERRIDES.items()}

    def constraints(self) -> OrgConstraints:
        """The organisation's constraints the remediation is chosen under."""
        return OrgConstraints(
            maintenance_window_available=self.maintenance_window_available,
            shared_nodes_can_stop=self.shared_nodes_can_stop,
            can_maintain_custom_build=self.can_maintain_custom_build,
            isolated_environment_available=self.isolated_environment_available,
            recovery_deadline_hours=self.recovery_deadline_hours,
        )

    def evaluated_on(self) -> _dt.date:
        """The date end-of-life rules are evaluated on (a record must be reproducible)."""
        return _dt.date.fromisoformat(self.today) if self.today else _dt.datetime.now(_dt.UTC).date()


@dataclasses.dataclass
class DecisionInputs(Record):
    """Where runbook 02's inputs came from: the evidence used, the overrides, the logs to read."""

    SCHEMA = "decision_inputs"

    evidence_path: str | None
    evidence_note: str
    inputs: CompatInputs
    overrides: dict[str, Any]
    log_paths: list[str]

    def _repr_html_(self) -> str:
        from ..display import esc, html_table

        rows = [
            {
                "input": f.name,
                "value": _shown(getattr(self.inputs, f.name)),
                "from": self.inputs.sources.get(f.name) or self.inputs.derived.get(f.name),
            }
            for f in dataclasses.fields(self.inputs)
            if f.name not in ("sources", "derived", "launch_env", "nccl_env")
        ]
        head = f"<p><b>Evidence:</b> {esc(self.evidence_path or '—')} ({esc(self.evidence_note)})</p>"
        logs = "<p><b>Logs:</b> " + esc(", ".join(self.log_paths) or "none") + "</p>"
        return head + logs + html_table(rows, ["input", "value", "from"])


def _shown(value: Any) -> Any:
    """A launch command reads best as one shell line, not a column of words."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return shlex.join(value)
    return value


def gather(config: Config) -> DecisionInputs:
    """Runbook 01's evidence when the run has it (through ``runs.load_result``), then the overrides.

    Evidence that is absent or refused (changed since capture) is said in ``evidence_note`` and
    the decision goes on from the parameters alone: it then says which input is missing.
    """
    from ..execution.runs import load_result

    source = config.evidence_dir or config.run_dir
    evidence = None
    note = "no evidence directory given"
    if source:
        try:
            evidence = load_result(source, "evidence_capture")
            note = f"runbook 01 evidence, collected {evidence.collected_at or '?'} from {evidence.source}"
        except FileNotFoundError:
            note = f"no evidence/evidence.json under {source}"
        except ValueError as exc:  # ArtefactError: changed since capture, or not evidence at all
            note = f"evidence refused: {exc}"
    inputs = build_inputs(evidence, config.overrides(), profile=config.profile, origin="parameter")
    logs = [str(p) for p in evidence.log_paths()] if evidence is not None else []
    where = evidence.evidence_dir if evidence is not None else None
    return DecisionInputs(
        evidence_path=str(Path(where) / "evidence.json") if where else None,
        evidence_note=note,
        inputs=inputs,
        overrides={p: f for p, f in OVERRIDES.items() if getattr(config, p) not in (None, "")},
        log_paths=logs + list(config.log_paths or []),
    )


@register_result
@dataclasses.dataclass
class CompatResult(Figures, ResultMixin, Record):
    """Runbook 02's outcome: what the logs say, what the decision is, and what to do."""

    FIGURES: ClassVar[dict[str, str]] = {
        "compatibility": "vllm_runbooks.compat.chart:compatibility_figure",
    }

    SCHEMA = "compat_result"
    RUNBOOK: ClassVar[str] = "compatibility_decision"
    VERDICTS: ClassVar[tuple[str, ...]] = VERDICTS
    ARTEFACT: ClassVar[str] = DECISION_FILE

    gathered: DecisionInputs
    logs: LogDiagnoses
    report: CompatReport

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompatResult:
        """Rebuild every part typed, so runbook 06 reads the decision, not a dict."""
        check_schema_version(cls, data)
        return cls(
            gathered=DecisionInputs.from_dict(data["gathered"]),
            logs=LogDiagnoses.from_dict(data.get("logs") or {}),
            report=CompatReport.from_dict(data["report"]),
        )

    @property
    def verdict(self) -> str:
        """The compatibility verdict (one of ``compat.VERDICTS``)."""
        return self.report.verdict

    def headline(self) -> Headline:
        """Verdict, remediation path, lint counts and the logs' root cause, for run.json."""
        head = self.report.key_figures()
        return self.make_headline(
            self.report.verdict, {**head, "log_label": self.logs.label, "logs_read": len(self.logs)}
        )

    def scraps(self) -> dict[str, Any]:
        """The decision, log diagnosis, remediation and lint as runbook 02 glues them, and the headline."""
        from ..redact import redact_obj

        return redact_obj(
            {
                "compat_decision": self.report.decision.to_dict(),
                "log_diagnosis": self.logs.to_dict(),
                "remediation": self.report.remediation.to_dict(),
                "lint": self.report.lint.to_dict(),
                "headline": self.headline().to_dict(),
            }
        )

    def log_timelines(self) -> Any:
        """One findings-by-line figure per log that has findings, shown together by one cell."""
        from ..display import FigureGroup

        return FigureGroup([d.timeline() for d in self.logs if d.findings], empty="no log findings to plot")

    def _repr_html_(self) -> str:
        from ..display import banner

        tone = "good" if self.verdict.startswith("compatible") else "unknown" if self.verdict == "unknown" else "bad"
        rem = self.report.remediation
        return banner(f"Verdict: {self.verdict}", f"path: {rem.path} — {rem.title}", tone)


def log_findings(logs: LogDiagnoses) -> list[dict[str, Any]]:
    """The classifier's findings in the plain form the decision cross-checks against."""
    return [
        {"label": f.label, "line": f.line, "text": f.text, "source": d.source}
        for d in logs
        for f in d.findings
        if f.label != "unrecognized_error"  # unexplained errors cannot confirm or contradict a verdict
    ]


def decide_gathered(
    gathered: DecisionInputs,
    constraints: OrgConstraints | dict[str, Any] | None = None,
    *,
    want_prefix_caching: bool | None = None,
    today: _dt.date | None = None,
) -> CompatResult:
    """Classify the logs, then decide, lint and recommend from gathered inputs."""
    from ..logs import diagnose_logs
    from .report import check

    logs = diagnose_logs(gathered.log_paths) if gathered.log_paths else LogDiagnoses()
    report = check(
        gathered.inputs,
        log_findings=log_findings(logs),
        constraints=constraints,
        want_prefix_caching=want_prefix_caching,
        today=today,
    )
    return CompatResult(gathered=gathered, logs=logs, report=report)


def run(config: Config) -> CompatResult:
    """Runbook 02 end to end, without Jupyter: gather, diagnose, decide, lint, recommend."""
    return decide_gathered(
        gather(config),
        config.constraints(),
        want_prefix_caching=config.want_prefix_caching,
        today=config.evaluated_on(),
    )


def remediation_controls(result: CompatResult, constraints: OrgConstraints) -> Any:
    """ipywidgets toggles that re-run the recommendation live (interactive use in JupyterLab)."""
    import ipywidgets as widgets

    from .remediate import recommend

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
        html = recommend(result.report.decision, chosen, lint=result.report.lint)._repr_html_()
        # Set the output directly, not through ``with out:``: under papermill that capture routes the
        # cell's messages to the widget and intermittently left nbclient waiting for the cell's end
        # until the execution timeout (seen: 02 hanging 60 s of 60, and 30 min with the default).
        out.outputs = ({"output_type": "display_data", "data": {"text/html": html}, "metadata": {}},)

    for w in [*toggles.values(), deadline]:
        w.observe(refresh, names="value")
    refresh()
    return widgets.VBox([*toggles.values(), deadline, out])
