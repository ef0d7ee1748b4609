"""The console's widgets: an incident bar, the evidence source, and one box per step.

Every element a person (or the browser test) looks for carries a CSS class: ``vr-step-<runbook>``
on a step's box, ``vr-param-<name>`` on a parameter, ``vr-run`` / ``vr-cancel`` on the buttons,
``vr-state``, ``vr-progress``, ``vr-verdict``, ``vr-guidance`` and ``vr-links`` on what it shows.
Widget updates from the background job go through widget values and ``Output.outputs`` (not the
``with out:`` context, which does not capture from another thread).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..display import PALETTE, banner, esc, figure_bundle, html_table
from ..execution.notebook_output import PLOTLY_MIME
from ..execution.parameters import coerce_cli_value
from ..execution.runjson import record_attachment
from ..execution.templates import Parameter
from .incident import Incident, incident_id
from .job import StepJob
from .plan import StepSpec, guidance_for, load_plan, shared_parameters
from .state import StepState, step_states

WIDTH = "760px"
DESC = {"description_width": "230px"}
MAX_UPLOAD_BYTES = 512 << 20
MAX_NOTEBOOK_BYTES = 64 << 20
MAX_CHARTS = 2
TONE = {"done": "good", "failed": "bad", "cancelled": "warn", "running": "unknown"}


def param_widget(param: Parameter) -> Any:
    """A widget for one declared parameter, typed from its default."""
    import ipywidgets as w

    common = {"description": param.name, "style": DESC, "layout": w.Layout(width=WIDTH), "tooltip": param.meaning}
    if param.kind == "bool":
        widget = w.Checkbox(value=bool(param.default), indent=False, **common)
    elif param.kind == "int":
        widget = w.IntText(value=param.default, **common)
    elif param.kind == "float":
        widget = w.FloatText(value=param.default, **common)
    elif param.kind == "str":
        widget = w.Text(value=param.default, **common)
    elif param.kind == "list":
        widget = w.Text(value=", ".join(map(str, param.default)), placeholder="comma-separated", **common)
    else:
        widget = w.Text(value="" if param.default is None else json.dumps(param.default), placeholder="None", **common)
    widget.add_class(f"vr-param-{param.name}")
    return widget


def widget_value(param: Parameter, widget: Any) -> Any:
    """The parameter value a widget holds (empty text → None for parameters defaulting to None)."""
    value = widget.value
    if param.kind in ("bool", "int", "float", "str"):
        return value
    text = str(value).strip()
    if param.kind == "list":
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in re.split(r"[,\n]", text) if part.strip()]
    return None if text in ("", "None") else coerce_cli_value(text)


def _figures_table(figures: dict[str, Any]) -> str:
    rows = []
    for key, value in list(figures.items())[:16]:
        shown = json.dumps(value, default=str) if isinstance(value, dict | list) else value
        rows.append({"figure": key, "value": str(shown)[:160]})
    return html_table(rows) if rows else ""


def notebook_charts(notebook: str | Path | None, limit: int = MAX_CHARTS) -> list[dict[str, Any]]:
    """The first plotly figures of an executed notebook, as display bundles."""
    if not notebook or not Path(notebook).is_file() or Path(notebook).stat().st_size > MAX_NOTEBOOK_BYTES:
        return []
    import plotly.io as pio

    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    bundles = []
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            data = (output.get("data") or {}).get(PLOTLY_MIME)
            if data and len(bundles) < limit:
                bundles.append(figure_bundle(pio.from_json(json.dumps(data))))
    return bundles


class StepBox:
    """One step: its parameters, buttons, progress line and result."""

    def __init__(self, console: Console, spec: StepSpec) -> None:
        import ipywidgets as w

        self.console, self.spec = console, spec
        self.params: dict[str, tuple[Parameter, Any]] = {}
        hidden = {"source"} if spec.runbook == "evidence_capture" else set()
        primary = [param_widget(p) for p in spec.primary if p.name not in hidden]
        more = [param_widget(p) for p in spec.more if p.name not in hidden]
        for p, widget in zip(
            [p for p in spec.primary if p.name not in hidden] + [p for p in spec.more if p.name not in hidden],
            primary + more,
            strict=True,
        ):
            self.params[p.name] = (p, widget)
        self.title = w.HTML(f"<h3 style='margin:4px 0'>{esc(spec.title)}</h3>")
        self.state = w.HTML()
        self.state.add_class("vr-state")
        self.run = w.Button(description="Run", button_style="primary", icon="play")
        self.run.add_class("vr-run")
        self.cancel = w.Button(description="Cancel", button_style="warning", icon="stop", disabled=True)
        self.cancel.add_class("vr-cancel")
        self.progress = w.HTML()
        self.progress.add_class("vr-progress")
        self.result = w.HTML()
        self.result.add_class("vr-result")
        self.charts = w.Output()
        self.charts.add_class("vr-charts")
        self.links = w.Output()
        self.links.add_class("vr-links")
        children: list[Any] = [w.HBox([self.title, self.state])]
        if spec.available:
            children += primary
            if more:
                acc = w.Accordion(children=[w.VBox(more)], selected_index=None)
                acc.set_title(0, f"more parameters ({len(more)})")
                children.append(acc)
            children += [w.HBox([self.run, self.cancel]), self.progress, self.result, self.links, self.charts]
        self.box = w.VBox(children, layout=w.Layout(border="1px solid #ddd", padding="6px", margin="6px 0"))
        self.box.add_class("vr-step")
        self.box.add_class(f"vr-step-{spec.runbook}")
        self.run.on_click(lambda _: console.start(self))
        self.cancel.on_click(lambda _: console.cancel(self))

    def values(self) -> dict[str, Any]:
        return {name: widget_value(p, widget) for name, (p, widget) in self.params.items()}

    def show_state(self, state: StepState, reason: str) -> None:
        tone = {"done": "good", "failed": "bad", "cancelled": "warn", "running": "info"}.get(state.value, "unknown")
        colour = PALETTE[tone]
        self.state.value = (
            f"<span class='vr-state-{state.value}' style='margin-left:12px;color:{colour}'>"
            f"<b>{esc(state.value)}</b> — {esc(reason)}</span>"
        )
        runnable = state in (StepState.READY, StepState.FAILED, StepState.CANCELLED)
        self.run.disabled = not runnable
        self.cancel.disabled = state != StepState.RUNNING
        for _, widget in self.params.values():
            widget.disabled = state in (StepState.RUNNING, StepState.DONE, StepState.UNAVAILABLE)

    def show_parameters(self, used: dict[str, Any]) -> None:
        """Show the values a recorded attempt ran with (a reopened incident shows what was run)."""
        for name, value in used.items():
            if name not in self.params:
                continue
            param, widget = self.params[name]
            try:
                if param.kind == "list" and isinstance(value, list):
                    widget.value = ", ".join(map(str, value))
                elif param.kind == "any":
                    widget.value = "" if value is None else str(value)
                else:
                    widget.value = value
            except Exception:  # a value the widget cannot hold (hand-edited run.json): leave the default
                continue

    def show_record(self, incident: Incident, record: Any | None) -> None:
        if record is None:
            self.result.value, self.links.outputs, self.charts.outputs = "", (), ()
            return
        if record.status == "cancelled":
            self.result.value = banner("cancelled", "stopped from the console; the partial notebook is kept", "warn")
        elif record.status != "ok" or record.verdict is None:
            self.result.value = banner("failed", record.error or "no verdict recorded", "bad")
        else:
            tone = "good" if record.verdict in ("complete", "pass", "working", "compatible") else "warn"
            self.result.value = (
                f"<div class='vr-verdict'>{banner(f'verdict: {record.verdict}', '', tone)}</div>"
                f"<div class='vr-guidance' style='margin:4px 0 8px'><b>Next:</b> "
                f"{esc(guidance_for(self.spec.runbook, record.verdict))}</div>" + _figures_table(record.figures)
            )
        parts = []
        for label, cls, path in (("executed notebook", "vr-link-notebook", record.notebook),
                                 ("HTML copy", "vr-link-html", record.html)):  # fmt: skip
            href = incident.link(path)
            if href:
                parts.append(f"<a class='{cls}' href='{esc(href)}' target='_blank'>{label}</a>")
        where = f" <code>{esc(record.notebook or '')}</code>" if record.notebook else ""
        self.links.outputs = (
            {"output_type": "display_data", "data": {"text/html": " · ".join(parts) + where}, "metadata": {}},
        )
        self.charts.outputs = tuple(
            {"output_type": "display_data", "data": b, "metadata": {}}
            for b in (notebook_charts(record.notebook) if record.status == "ok" else [])
        )


class Console:
    """The whole console: incident bar, evidence source, steps; one job at a time."""

    def __init__(self, default_source: str = "local", runs_dir: str | None = None) -> None:
        import ipywidgets as w

        self.runs_dir = runs_dir
        self.plan = load_plan()
        self.shared = shared_parameters()
        self.incident: Incident | None = None
        self.job: StepJob | None = None
        self.job_box: StepBox | None = None

        self.incident_label = w.HTML()
        self.incident_label.add_class("vr-incident")
        self.new_button = w.Button(description="New incident", icon="plus")
        self.new_button.add_class("vr-new-incident")
        self.open_path = w.Text(placeholder="runs/<run directory> of an earlier incident")
        self.open_path.layout.width = "480px"
        self.open_path.add_class("vr-open-path")
        self.open_button = w.Button(description="Reopen", icon="folder-open")
        self.open_button.add_class("vr-open")
        self.message = w.HTML()
        self.message.add_class("vr-message")

        self.source_mode = w.ToggleButtons(options=["local", "bundle", "upload"], value="bundle")
        self.source_mode.add_class("vr-source-mode")
        self.source_path = w.Text(value=default_source, description="bundle", style=DESC, layout=w.Layout(width=WIDTH))
        self.source_path.add_class("vr-param-source")
        self.upload = w.FileUpload(accept=".tar.gz,.tgz", multiple=False)
        self.upload.add_class("vr-upload")
        if default_source == "local":
            self.source_mode.value = "local"

        self.steps = [StepBox(self, spec) for spec in self.plan]
        for i, box in enumerate(self.steps):
            for name in self.shared:
                if name in box.params:
                    box.params[name][1].observe(self._propagate(i, name), names="value")
        self.new_button.on_click(lambda _: self.new_incident())
        self.open_button.on_click(lambda _: self.reopen(self.open_path.value))
        source = w.VBox(
            [w.HTML("<h3 style='margin:4px 0'>Evidence source</h3>"), self.source_mode, self.source_path, self.upload],
            layout=w.Layout(border="1px solid #ddd", padding="6px"),
        )
        bar = w.VBox([w.HBox([self.new_button, self.open_path, self.open_button]), self.incident_label, self.message])
        self.widget = w.VBox([bar, source, *[b.box for b in self.steps]])
        self.widget.add_class("vr-console")
        self.refresh()

    # -- incident ---------------------------------------------------------------------------
    def new_incident(self) -> Incident:
        """A new run directory for a new incident."""
        self.incident = Incident.create(self.runs_dir)
        self.message.value = ""
        self.refresh()
        return self.incident

    def reopen(self, path: str) -> None:
        """Show where an earlier incident stands; later presses write into its run directory."""
        try:
            self.incident = Incident.open(path.strip())
            self.message.value = ""
        except (OSError, ValueError) as exc:
            self.message.value = banner("cannot reopen", str(exc), "bad")
            return
        self.refresh()

    def _propagate(self, index: int, name: str) -> Any:
        def changed(change: dict[str, Any]) -> None:
            for later in self.steps[index + 1 :]:
                if name in later.params and not later.params[name][1].disabled:
                    later.params[name][1].value = change["new"]

        return changed

    def _source(self) -> str:
        mode = self.source_mode.value
        if mode == "local":
            return "local"
        if mode == "bundle":
            return self.source_path.value.strip()
        files = list(self.upload.value or ())
        if not files:
            raise ValueError("choose a bundle .tar.gz to upload first")
        upload = files[0]
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(upload["name"]))[:100] or "bundle.tar.gz"
        content = bytes(upload["content"])
        if len(content) > MAX_UPLOAD_BYTES:
            raise ValueError(f"bundle larger than {MAX_UPLOAD_BYTES >> 20} MiB")
        assert self.incident is not None
        target = self.incident.run_dir / "upload" / name
        target.parent.mkdir(exist_ok=True)
        with target.open("xb") as handle:  # never over an earlier upload
            handle.write(content)
        # Listed in the run's manifest as the console's upload: the next step's run.json entry
        # refuses files no recorded writer put in the run directory.
        record_attachment(self.incident.run_dir, "incident console upload", [target])
        return str(target)

    # -- steps ------------------------------------------------------------------------------
    def start(self, box: StepBox) -> None:
        """Run a step into this incident's run directory (a new incident when there is none)."""
        if self.job is not None and self.job.running:
            return
        if self.incident is None:
            self.new_incident()
        assert self.incident is not None and box.spec.template is not None
        try:
            params = box.values()
            if box.spec.runbook == "evidence_capture":
                params["source"] = self._source()
            for name in box.spec.from_incident:
                params[name] = str(self.incident.run_dir)
        except (ValueError, OSError) as exc:
            box.progress.value = f"<span style='color:{PALETTE['bad']}'>{esc(exc)}</span>"
            return
        self.incident.prepare_rerun(box.spec.template.name)
        box.progress.value = "<span class='vr-progress-line'>starting…</span>"
        self.job_box = box
        self.job = StepJob(
            box.spec.runbook,
            params,
            self.incident.run_dir,
            on_progress=lambda line: self._progress(box, line),
            on_done=self._done,
        )
        self.job.start()
        self.refresh()

    def _progress(self, box: StepBox, line: str) -> None:
        elapsed = self.job.elapsed_s if self.job else 0.0
        box.progress.value = f"<span class='vr-progress-line'>{elapsed:5.0f} s · {esc(line)}</span>"

    def cancel(self, box: StepBox) -> None:
        """Stop the running step; it is recorded as cancelled."""
        if self.job is not None and self.job_box is box:
            box.progress.value = "<span class='vr-progress-line'>cancelling…</span>"
            self.job.cancel()

    def _done(self, job: StepJob) -> None:
        box = self.job_box
        assert box is not None and self.incident is not None and box.spec.template is not None
        if job.cancelled:
            self.incident.record_cancelled(
                box.spec.runbook, box.spec.template.name, job.parameters, job.started_at, job.elapsed_s
            )
            box.progress.value = f"<span class='vr-progress-line'>cancelled after {job.elapsed_s:.0f} s</span>"
        else:
            box.progress.value = (
                f"<span class='vr-progress-line'>finished in {job.elapsed_s:.0f} s (exit {job.returncode})</span>"
            )
        self.job = None
        self.job_box = None
        self.refresh()

    def refresh(self) -> None:
        """Redraw every step from the incident's run.json."""
        records = {}
        if self.incident is not None:
            try:
                records = self.incident.records()
            except ValueError as exc:
                self.message.value = banner("run.json unreadable", str(exc), "bad")
            where = self.incident.run_dir
            self.incident_label.value = (
                f"<b>Incident</b> <code class='vr-incident-id'>{esc(incident_id(where))}</code> — run directory "
                f"<code class='vr-incident-dir'>{esc(where)}</code>"
            )
        else:
            self.incident_label.value = "<b>No incident yet</b>: the first Run creates its run directory."
        states = step_states(self.plan, records, self.job_box.spec.runbook if self.job_box else None)
        for box in self.steps:
            state, reason = states[box.spec.runbook]
            box.show_state(state, reason)
            if state != StepState.RUNNING and self.incident is not None:
                record = records.get(box.spec.runbook)
                if state == StepState.DONE and record is not None:
                    box.show_parameters(record.parameters)
                box.show_record(self.incident, record)
