"""What runbook 04 reads before sending anything: endpoint state, metrics, launch command and log."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..display import banner, html_table
from ..records import Record
from ..redact import redact_text
from .sources import LaunchAndLog


@dataclass
class CheckInputs(Record):
    """What the check reads before sending anything: endpoint state, metrics, launch and log."""

    SCHEMA = "prefix_cache_inputs"
    endpoint: str
    reachable: bool = False
    problem: str = ""
    model: str | None = None
    metrics_ok: bool = False
    metrics_problem: str = ""
    renamed_metrics: dict[str, str] = field(default_factory=dict)
    cache_config: dict[str, str] = field(default_factory=dict)
    engines: list[str] = field(default_factory=list)
    launch_log: LaunchAndLog = field(default_factory=LaunchAndLog)
    collected_at: str = ""

    def _repr_html_(self) -> str:
        tone = "good" if self.reachable and self.metrics_ok else "warn" if self.reachable else "bad"
        title = f"Endpoint {self.endpoint}: " + ("reachable" if self.reachable else "unreachable")
        detail = self.problem or f"model {self.model}; metrics {'ok' if self.metrics_ok else self.metrics_problem}"
        ll = self.launch_log
        rows = [
            {
                "input": "launch command",
                "from": ll.launch_origin or "—",
                "value": redact_text(ll.launch_command or "")[:300],
            },
            {
                "input": "startup log",
                "from": ll.log_origin or "—",
                "value": f"{len(ll.log_text)} chars" if ll.log_text else None,
            },
            {"input": "cache_config_info", "from": "/metrics", "value": f"{len(self.cache_config)} labels"},
            {"input": "engines", "from": "/metrics", "value": ", ".join(self.engines) or None},
        ]
        rows += [{"input": "note", "from": "", "value": redact_text(n)} for n in ll.notes]
        return banner(title, redact_text(detail), tone) + html_table(rows)
