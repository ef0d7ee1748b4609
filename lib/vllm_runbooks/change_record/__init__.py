"""Runbook 06, the change record: adopted path, verified scope, checklist ticked from evidence.

record = build_record(run_dir, baseline_dir)   # refuses (RecordRefused) on an altered artefact
record                                         # banner + checklist + scope
save_record(record, run_dir)                   # change_record.md / .json / .html
"""

from .build import PROCEDURE, RecordOptions, build_record, vocabulary
from .compare import Thresholds, compare_dirs, compare_views
from .model import BaselineItem, Change, ChangeRecord, ChecklistItem, Citation, RollbackCondition, ScopeItem
from .render import save_record, to_html, to_markdown
from .sources import RecordRefused, RunView

__all__ = [
    "PROCEDURE",
    "BaselineItem",
    "Change",
    "ChangeRecord",
    "ChecklistItem",
    "Citation",
    "RecordOptions",
    "RecordRefused",
    "RollbackCondition",
    "RunView",
    "ScopeItem",
    "Thresholds",
    "build_record",
    "compare_dirs",
    "compare_views",
    "save_record",
    "to_html",
    "to_markdown",
    "vocabulary",
]
