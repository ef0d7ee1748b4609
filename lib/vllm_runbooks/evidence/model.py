"""Evidence records: what runbook 01 established, and for each fact why it could not be.

The JSON shape is the contract in docs/EVIDENCE_SCHEMA.md; later runbooks read it with
``runs.load_result(run_dir, "evidence_capture")`` (which lands in :meth:`Evidence.load`) and never
need the collectors: this module imports neither the collectors, the probe nor the runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..bounded import load_json
from ..display import Figures
from ..execution import runjson
from ..execution.runjson import ArtefactError, check_files, verify_artefact
from ..records import Record
from ..stage import Headline, ResultMixin, register_result

OK = "ok"
PARTIAL = "partial"
UNAVAILABLE = "unavailable"
STATUSES = (OK, PARTIAL, UNAVAILABLE)


@dataclass
class Item:
    """One collector's result: a value, or ``unavailable`` with the reason."""

    status: str = UNAVAILABLE
    reason: str | None = None
    value: dict[str, Any] = field(default_factory=dict)
    artefacts: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    @classmethod
    def ok(cls, value: dict[str, Any], artefacts: list[str] | None = None, reason: str | None = None) -> Item:
        """An established value."""
        return cls(OK, reason, value, list(artefacts or []))

    @classmethod
    def partial(cls, value: dict[str, Any], reason: str, artefacts: list[str] | None = None) -> Item:
        """A value with gaps, and the reason for them."""
        return cls(PARTIAL, reason, value, list(artefacts or []))

    @classmethod
    def unavailable(cls, reason: str, value: dict[str, Any] | None = None, artefacts: list[str] | None = None) -> Item:
        """Nothing established, and why (never a silent gap)."""
        return cls(UNAVAILABLE, reason, dict(value or {}), list(artefacts or []))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Item:
        """Read one item from evidence.json, tolerant of missing keys."""
        return cls(
            status=str(data.get("status", UNAVAILABLE)),
            reason=data.get("reason"),
            value=dict(data.get("value") or {}),
            artefacts=list(data.get("artefacts") or []),
            duration_s=float(data.get("duration_s") or 0.0),
        )


EVIDENCE_FILE = "evidence.json"
#: evidence.json is a few hundred KiB at most; a bigger (or hand-made) one is refused, not held in memory.
EVIDENCE_MAX_BYTES = 64 * 1024 * 1024
VERDICTS = ("complete", "partial", "empty")


@register_result
@dataclass
class Evidence(Figures, ResultMixin, Record):
    """Everything runbook 01 froze about one node and one launch (runbook 01's stage result)."""

    FIGURES: ClassVar[dict[str, str]] = {
        "memory": "vllm_runbooks.evidence.display:memory_figure",
        "topology": "vllm_runbooks.evidence.display:topology_figure",
    }

    SCHEMA: ClassVar[str] = "evidence"
    SCHEMA_VERSION: ClassVar[int] = 1
    RUNBOOK: ClassVar[str] = "evidence_capture"
    VERDICTS: ClassVar[tuple[str, ...]] = VERDICTS
    ARTEFACT: ClassVar[str] = "evidence/evidence.json"

    source: str = "local"
    collected_at: str = ""
    items: dict[str, Item] = field(default_factory=dict)
    artefacts: dict[str, str] = field(default_factory=dict)
    evidence_dir: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        """Rebuild with every item typed."""
        base = super().from_dict({k: v for k, v in data.items() if k != "items"})
        base.items = {k: Item.from_dict(v) for k, v in (data.get("items") or {}).items()}
        return base

    # -- convenient reads for later stages ----------------------------------------------------
    def get(self, item: str, key: str | None = None, default: Any = None) -> Any:
        """``ev.get("nvidia", "driver_version")``: the value or ``default`` when unknown."""
        it = self.items.get(item)
        if it is None:
            return default
        if key is None:
            return it.value
        val = it.value.get(key, default)
        return default if val is None else val

    def status(self, item: str) -> str:
        """ok / partial / unavailable; a collector that did not run reads as unavailable."""
        it = self.items.get(item)
        return it.status if it else UNAVAILABLE

    def item(self, name: str) -> Item:
        """The item, or an ``unavailable`` one saying it was not collected (callers never test for None)."""
        return self.items.get(name) or Item.unavailable(f"{name} was not collected")

    def established(self, name: str) -> dict[str, Any]:
        """The item's value unless it is ``unavailable``: a gap must not be read as a fact."""
        it = self.items.get(name)
        return dict(it.value) if it is not None and it.status != UNAVAILABLE else {}

    def launch_command(self) -> str | None:
        """The recorded launch command as one (redacted) shell line, or None."""
        import shlex

        launch = self.established("launch")
        if launch.get("command"):
            return str(launch["command"])
        return shlex.join(str(a) for a in launch["argv"]) if launch.get("argv") else None

    def log_paths(self) -> list[Path]:
        """The logs runbook 01 stored (redacted) under ``evidence/raw/logs/``, as paths to read."""
        root = Path(self.evidence_dir) if self.evidence_dir else None
        files = self.established("logs").get("files") or []
        return [root / f["stored_as"] for f in files if root is not None and isinstance(f, dict) and f.get("stored_as")]

    def unavailable(self) -> dict[str, str]:
        """Collector → reason for everything not fully established."""
        return {k: (v.reason or "") for k, v in self.items.items() if v.status != OK}

    def verdict(self) -> str:
        """complete: every collector ok; partial: some gaps; empty: nothing established."""
        if not self.items:
            return "empty"
        states = [v.status for v in self.items.values()]
        if all(s == OK for s in states):
            return "complete"
        if all(s == UNAVAILABLE for s in states):
            return "empty"
        return "partial"

    def headline(self) -> Headline:
        """The facts later runbooks and run.json need first: GPUs, driver and its CUDA, image, vLLM."""
        gpus = self.get("nvidia", "gpus") or []
        return self.make_headline(
            self.verdict(),
            {
                "gpus": len(gpus),
                "gpu_name": gpus[0].get("name") if gpus else None,
                "driver": self.get("nvidia", "driver_version"),
                "driver_branch": self.get("nvidia", "driver_branch"),
                "driver_cuda": self.get("nvidia", "cuda_driver_version"),
                "image_cuda": self.get("image", "cuda_version"),
                "vllm": self.get("vllm", "version"),
                "log_errors": sum(len(f.get("first_errors") or []) for f in self.get("logs", "files") or []),
                "unavailable_count": sum(1 for v in self.items.values() if v.status == UNAVAILABLE),
                "partial_count": sum(1 for v in self.items.values() if v.status == PARTIAL),
                "hardware": self.get("hardware", "verdict", "unknown"),
                "hardware_findings": (self.get("hardware", "counts") or {}).get("faulty", 0)
                + (self.get("hardware", "counts") or {}).get("degraded", 0),
                "xids": self.get("hardware", "xids") or [],
                "fit": self.get("fit", "status", "unknown"),
            },
        )

    def scraps(self) -> dict[str, Any]:
        """The compact evidence (no raw env dumps) and the headline, as runbook 01 glues them."""
        return {"evidence": self.compact(), "headline": self.headline().to_dict()}

    def save(self, run_dir: str | Path | None) -> Path | None:
        """Evidence is written while it is collected (``collect_evidence``); nothing more to save."""
        return Path(self.evidence_dir) / EVIDENCE_FILE if self.evidence_dir else None

    @classmethod
    def load(
        cls,
        run_dir: str | Path,
        verify: bool = True,
        *,
        manifest: Any = runjson.UNREAD,
        hashed: dict[str, str] | None = None,
    ) -> Evidence:
        """Read ``evidence.json`` from a run dir, an evidence dir or the file itself.

        With ``verify`` (the default) the evidence's own sha256 manifest and run.json's are
        checked; a changed, missing or unreadable file raises ``ArtefactError`` naming it. A
        reader of a whole run passes run.json's ``manifest`` (None: no run.json) and its
        ``hashed`` memo, so run.json is not parsed again and no file is hashed twice.
        """
        p = Path(run_dir)
        if p.is_dir():
            p = p / EVIDENCE_FILE if (p / EVIDENCE_FILE).is_file() else p / "evidence" / EVIDENCE_FILE
        if not p.is_file():
            raise FileNotFoundError(f"no evidence file at {p}")
        try:
            data: Any = load_json(p, EVIDENCE_MAX_BYTES)[0]
        except (OSError, ValueError) as exc:
            raise ArtefactError(p, f"not readable JSON ({exc})") from exc
        if not isinstance(data, dict) or data.get("schema") != cls.SCHEMA:
            schema = data.get("schema") if isinstance(data, dict) else type(data).__name__
            raise ArtefactError(p, f"is not an evidence file (schema={schema!r})")
        ev = cls.from_dict(data)
        ev.evidence_dir = str(p.parent)
        if verify:
            if p.parent.name == "evidence" and manifest is runjson.UNREAD:
                verify_artefact(p.parent.parent, p)
            elif p.parent.name == "evidence" and manifest is not None:
                rel = p.resolve().relative_to(p.parent.parent.resolve()).as_posix()
                for c in check_files(p.parent.parent, manifest, names=[rel], hashed=hashed):
                    if c.status != runjson.OK:
                        raise ArtefactError(p, c.why)
            listed = {str(rel): str(h) for rel, h in ev.artefacts.items()}
            checks = check_files(p.parent, listed, source=EVIDENCE_FILE, hashed=hashed)
            bad = [c.rel for c in checks if c.status != runjson.OK]
            if bad:
                raise ArtefactError(
                    p.parent / bad[0], f"evidence artefacts missing or changed since capture: {', '.join(bad)}"
                )
        return ev

    def compact(self) -> dict[str, Any]:
        """Scrap form: statuses, reasons and values, without raw env dumps and long texts."""
        drop = {"env", "kernel_module", "toolkit_config", "labels", "os_release", "raw"}
        items = {}
        for name, it in self.items.items():
            val = {k: v for k, v in it.value.items() if k not in drop}
            items[name] = {"status": it.status, "reason": it.reason, "value": val}
        return {
            "schema": self.SCHEMA,
            "schema_version": self.SCHEMA_VERSION,
            "source": self.source,
            "collected_at": self.collected_at,
            "evidence_dir": self.evidence_dir,
            "items": items,
        }

    def _repr_html_(self) -> str:
        from .display import evidence_html

        return evidence_html(self)

    # -- display (a runbook cell is a call and a name) ---------------------------------------
    def section(self, name: str) -> Any:
        """A titled key/value view of one section: host, driver, image, container, launch, …"""
        from .display import section

        return section(self, name)

    def gpu_table(self) -> Any:
        """One row per GPU."""
        from .display import gpu_table

        return gpu_table(self)

    def hardware_view(self) -> Any:
        """The hardware verdict (every finding with source and action) and the start-up fit."""
        from .display import hardware_view

        return hardware_view(self)

    def logs_view(self) -> Any:
        """The stored logs and their first errors."""
        from .display import logs_view

        return logs_view(self)

    def unavailable_table(self) -> Any:
        """What could not be established, and why."""
        from .display import unavailable_table

        return unavailable_table(self)
