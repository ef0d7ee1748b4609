"""The incident console: the whole procedure (01 → 06) step by step in JupyterLab.

Split so the logic is tested without a browser: ``plan`` (steps, their parameters from the
runbook templates, verdict guidance), ``incident`` (one run directory per incident and where it
stands), ``job`` (a step in a background process with a progress line, cancellable), and ``ui``
(the ipywidgets that show them).
"""

from .incident import Incident, StepRecord
from .job import StepJob
from .plan import StepSpec, guidance_for, load_plan
from .state import StepState, step_states

__all__ = ["Incident", "StepJob", "StepRecord", "StepSpec", "StepState", "guidance_for", "load_plan", "step_states"]
