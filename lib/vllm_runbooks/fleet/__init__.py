"""Runbook 07, fleet survey: runbook 01's evidence and 02's decision on every node, then a rollout plan.

    from vllm_runbooks.fleet import Config, run
    result = run(Config(bundles=["/shared/bundles"], image_cuda="13.0", profile="kimi_k3", run_dir=...))
    result = run(Config(ray_address="auto", ...))          # needs the optional extra: [fleet]

Nothing here imports Ray except :mod:`vllm_runbooks.fleet.ray_survey`, loaded only for a Ray survey.
"""

from .model import ACTIONS, NodeRow, TargetImage
from .plan import RolloutPlan, make_plan
from .result import FleetResult
from .stage import Config, run

__all__ = ["ACTIONS", "Config", "FleetResult", "TargetImage", "NodeRow", "RolloutPlan", "make_plan", "run"]
