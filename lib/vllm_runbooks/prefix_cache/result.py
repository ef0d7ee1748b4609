"""Runbook 04's result: every step's record and the verdict, saved as ``prefix_cache/check.json``.

Why a record and not the running check: the check holds a client and state; the result is what
a later stage (runbook 06, ``vllm-runbooks compare``) reads back with
``runs.load_result(run_dir, "prefix_cache_check")``, typed, without an endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..display import Figures
from ..records import Record
from ..stage import Headline, ResultMixin, register_result
from .experiment import ExperimentResult
from .granularity import HitGranularity, PrefixFit
from .inputs import CheckInputs
from .mismatch import MismatchReport
from .retention import RetentionResult
from .sources import Enablement
from .verdict import VERDICTS, Verdict

CHECK_FILE = "prefix_cache/check.json"


@register_result
@dataclass
class PrefixCacheResult(Figures, ResultMixin, Record):
    """What runbook 04 found: inputs, enablement, granularity, experiment, mismatch, retention, verdict."""

    FIGURES: ClassVar[dict[str, str]] = {
        "ttft_by_request": "vllm_runbooks.prefix_cache.figures:ttft_by_request",
        "cached_tokens_per_request": "vllm_runbooks.prefix_cache.figures:cached_tokens_per_request",
        "counter_deltas": "vllm_runbooks.prefix_cache.figures:counter_deltas",
        "shared_prefix_distribution": "vllm_runbooks.prefix_cache.figures:shared_prefix_distribution",
    }

    SCHEMA = "prefix_cache_result"
    RUNBOOK: ClassVar[str] = "prefix_cache_check"
    VERDICTS: ClassVar[tuple[str, ...]] = VERDICTS
    ARTEFACT: ClassVar[str] = CHECK_FILE

    verdict: Verdict
    inputs: CheckInputs | None = None
    enablement: Enablement | None = None
    granularity: HitGranularity | None = None
    experiment: ExperimentResult | None = None
    fit: PrefixFit | None = None
    mismatch: MismatchReport | None = None
    retention: RetentionResult | None = None

    def headline(self) -> Headline:
        """The verdict and its bounded key figures (no per-request lists: run.json stays small)."""
        return self.make_headline(self.verdict.verdict, self.verdict.figures)

    def scraps(self) -> dict[str, Any]:
        """Plain JSON for every figure and result, keyed by scrap name; redacted (the notebook is shared)."""
        from ..redact import redact_obj

        exp, mm = self.experiment, self.mismatch
        out: dict[str, Any] = {}
        if self.inputs:
            out["inputs"] = self.inputs.to_dict()
        if self.enablement:
            out["enablement"] = self.enablement.to_dict()
        if self.granularity:
            out["granularity"] = self.granularity.to_dict()
        if exp:
            out["ttft_by_request"] = {
                "request": [o.index + 1 for o in exp.observations],
                "ttft_s": [o.ttft_s for o in exp.observations],
            }
            out["cached_tokens_per_request"] = {
                "request": [o.index + 1 for o in exp.observations],
                "prompt_tokens": [o.prompt_tokens for o in exp.observations],
                "cached_tokens": [o.cached_tokens for o in exp.observations],
                "expected_cached": [o.expected_cached for o in exp.observations],
            }
            out["counter_deltas"] = exp.deltas.to_dict()
            out["experiment"] = exp.to_dict()
        if mm:
            out["shared_prefix_distribution"] = mm.figures() if mm.ok else {"skipped": mm.reason}
            out["mismatch"] = mm.to_dict()
        if self.retention:
            out["retention"] = self.retention.to_dict()
        out["verdict"] = self.verdict.to_dict()
        out["headline"] = self.headline().to_dict()
        return redact_obj(out)

    def _repr_html_(self) -> str:
        return self.verdict._repr_html_()


#: Figures the result can draw, in the runbook's order (``result.figure(name)``).
FIGURES = tuple(PrefixCacheResult.FIGURES)
