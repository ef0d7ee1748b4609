"""Validation history: every run under a runs directory, verdicts over time, figure trends, regressions.

The application team schedules the canary (and the other runbooks) with papermill; this package
answers "since when is it worse?" from the run directories alone (their ``run.json``), without
opening a notebook. Runbook 08 (``validation_history``) is its notebook.
"""

from .detect import Rules, detect, load_rules
from .model import RUNBOOK, VERDICTS, History
from .read import Point, read_points
from .stage import Config, run

__all__ = ["RUNBOOK", "VERDICTS", "Config", "History", "Point", "Rules", "detect", "load_rules", "read_points", "run"]
