"""Citations of a run's artefacts, as links relative to where the record is written.

Why one maker: every ticked item must cite the file (and its sha256) that proves it, and every
cited file must land in the record's artefact list; one callable does both, so no section can
cite a file without listing it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .integrity import digest_of
from .model import Citation
from .sources import RunView


class Cite:
    """Makes citations of one run's artefacts as links relative to the record's run directory."""

    def __init__(self, view: RunView, record_dir: Path, cited: dict[str, str]) -> None:
        self.view, self.record_dir, self.cited = view, record_dir, cited

    def __call__(self, runbook: str, rel: str, what: str = "", value: Any = None) -> Citation:
        digest = digest_of(self.view, rel)
        link = os.path.relpath(self.view.path / rel, self.record_dir)
        self.cited[link] = digest
        return Citation(self.view.run_id, runbook, link, what, short(value), digest)


def short(value: Any, limit: int = 160) -> Any:
    """A string value cut to ``limit`` characters, so a citation never carries a whole output."""
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "…"
    return value
