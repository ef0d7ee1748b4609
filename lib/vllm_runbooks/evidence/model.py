"""Evidence records: what runbook 01 established, and for each fact why it could not be.

The JSON shape is the contract in docs/EVIDENCE_SCHEMA.md; later runbooks read it with
``Evidence.from_dict`` / ``load_evidence`` and never need the collectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..records import Record

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
        return cls(OK, reason, value, list(artefacts or []))

    @classmethod
    def partial(cls, value: dict[str, Any], reason: str, artefacts: list[str] | None = None) -> Item:
        return cls(PARTIAL, reason, value, list(artefacts or []))

    @classmethod
    def unavailable(cls, reason: str, value: dict[str, Any] | None = None, artefacts: list[str] | None = None) -> Item:
        return cls(UNAVAILABLE, reason, dict(value or {}), list(artefacts or []))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Item:
        return cls(
            status=str(data.get("status", UNAVAILABLE)),
            reason=data.get("reason"),
            value=dict(data.get("value") or {}),
            artefacts=list(data.get("artefacts") or []),
            duration_s=float(data.get("duration_s") or 0.0),
        )


@dataclass
class Evidence(Record):
    """Everything runbook 01 froze about one node and one launch."""

    SCHEMA: ClassVar[str] = "evidence"
    SCHEMA_VERSION: ClassVar[int] = 1

    source: str = "local"
    collected_at: str = ""
    items: dict[str, Item] = field(default_factory=dict)
    artefacts: dict[str, str] = field(default_factory=dict)
    evidence_dir: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
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
        it = self.items.get(item)
        return it.status if it else UNAVAILABLE

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

    def headline(self) -> dict[str, Any]:
        gpus = self.get("nvidia", "gpus") or []
        return {
            "runbook": "evidence_capture",
            "verdict": self.verdict(),
            "figures": {
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
            },
        }

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
        from .display import gpu_table

        return gpu_table(self)

    def memory_figure(self) -> Any:
        from .display import memory_figure

        return memory_figure(self)

    def topology_figure(self) -> Any:
        from .display import topology_figure

        return topology_figure(self)

    def logs_view(self) -> Any:
        from .display import logs_view

        return logs_view(self)

    def unavailable_table(self) -> Any:
        from .display import unavailable_table

        return unavailable_table(self)
