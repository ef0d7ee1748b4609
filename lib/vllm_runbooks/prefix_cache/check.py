"""The prefix-cache check as one object that runs runbook 04's steps against one endpoint.

Each step returns a result that displays itself and is kept on the check, so ``decide()`` and
``result()`` see everything that ran (``prefix_cache.stage.run`` drives every step in order).
Steps that cannot run (no endpoint, no JSONL, retention not asked for) return a result that
says so; nothing here raises to the notebook.

The notebook and the run directory are shared evidence: ``scraps()`` (what ``glue_result`` puts
in the notebook) is redacted, and ``save`` writes through ``write_artefact`` (redacted, a new file,
never over another).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..client import EndpointClient
from ..metrics import MetricsSnapshot
from ..records import utc_now
from .experiment import ExperimentResult, ExperimentSpec, build_spec, run_experiment, scrape
from .granularity import HitGranularity, PrefixFit, hit_granularity, prefix_fit
from .inputs import CheckInputs
from .mismatch import MismatchReport, analyse_jsonl
from .result import FIGURES, PrefixCacheResult
from .retention import RetentionResult, run_retention
from .sources import Enablement, check_enablement, load_launch_and_log
from .verdict import Verdict, decide


class PrefixCacheCheck:
    """Runs the steps of runbook 04 against one endpoint, bounded per step."""

    def __init__(
        self,
        endpoint: str = "http://127.0.0.1:8000",
        *,
        model: str | None = None,
        api_key_env: str | None = None,
        launch_command: str | None = None,
        log_path: str | None = None,
        evidence_dir: str | None = None,
        profile: str | None = None,
        model_default_on: bool | None = None,
        max_requests: int = 20,
        max_seconds: float = 120.0,
        request_timeout_s: float = 60.0,
        client: EndpointClient | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.client = client or EndpointClient(
            endpoint, api_key_env=api_key_env, model=model, timeout_s=request_timeout_s
        )
        self.launch_command, self.log_path, self.evidence_dir = launch_command, log_path, evidence_dir
        self.profile, self.model_default_on = profile, model_default_on
        self.max_requests, self.max_seconds = max_requests, max_seconds
        self.request_timeout_s = request_timeout_s
        self.inputs_result: CheckInputs | None = None
        self.snapshot: MetricsSnapshot | None = None
        self.enablement_result: Enablement | None = None
        self.granularity_result: HitGranularity | None = None
        self.spec: ExperimentSpec | None = None
        self.experiment_result: ExperimentResult | None = None
        self.fit_result: PrefixFit | None = None
        self.mismatch_result: MismatchReport | None = None
        self.retention_result: RetentionResult | None = None
        self.verdict_result: Verdict | None = None

    def close(self) -> None:
        """Close the endpoint client (its connections)."""
        self.client.close()

    # -- steps ------------------------------------------------------------------------------------
    def inputs(self) -> CheckInputs:
        """Probe the endpoint, scrape /metrics once, and find the launch command and log."""
        out = CheckInputs(self.endpoint, collected_at=utc_now())
        out.launch_log = load_launch_and_log(self.launch_command, self.log_path, self.evidence_dir)
        models = self.client.models(timeout_s=10)
        if models.ok:
            out.reachable = True
            if self.client.model is None:
                self.client.model = (models.model_ids or [None])[0]
            out.model = self.client.model
        else:
            f = models.failure
            out.problem = f"{f.kind}: {f.error_message or f.message}" if f else "no answer from /v1/models"
        snap, why = scrape(self.client) if out.reachable else (None, out.problem)
        self.snapshot = snap
        if snap is not None:
            out.metrics_ok = True
            out.renamed_metrics = snap.renamed()
            out.cache_config = snap.cache_config()
            out.engines = sorted({r.get("engine", "") for r in snap.info_labels()})
        else:
            out.metrics_problem = why
        self.inputs_result = out
        return out

    def _inputs(self) -> CheckInputs:
        return self.inputs_result or self.inputs()

    def enablement(self) -> Enablement:
        """Is it on? Launch command, startup log, ``cache_config_info`` and profile default, side by side."""
        inp = self._inputs()
        self.enablement_result = check_enablement(
            launch_command=inp.launch_log.launch_command,
            log_text=inp.launch_log.log_text,
            cache_config=inp.cache_config,
            metrics_failure=inp.metrics_problem,
            profile=self.profile,
            model_default_on=self.model_default_on,
        )
        return self.enablement_result

    def granularity(self) -> HitGranularity:
        """Can it hit at all? The smallest possible hit, from the block size the server reports."""
        self.granularity_result = hit_granularity(self._inputs().cache_config)
        return self.granularity_result

    def _granularity(self) -> HitGranularity:
        return self.granularity_result or self.granularity()

    def experiment(
        self,
        requests: int = 5,
        shared_prompt_tokens: int = 512,
        *,
        tools: list[dict[str, Any]] | None = None,
        image_url: str | None = None,
        max_tokens: int = 8,
    ) -> ExperimentResult:
        """N requests sharing ~``shared_prompt_tokens`` of system prompt and tools; tail varied."""
        inp = self._inputs()
        if not inp.reachable:
            self.experiment_result = ExperimentResult(requested=requests, notes=[f"skipped: {inp.problem}"])
            return self.experiment_result
        gran = self._granularity()
        self.spec = build_spec(
            self.client,
            shared_prompt_tokens,
            min(requests, self.max_requests),
            tools=tools,
            image_url=image_url,
            max_tokens=max_tokens,
        )
        self.experiment_result = run_experiment(
            self.client,
            self.spec,
            requests=requests,
            granularity=gran,
            max_requests=self.max_requests,
            max_seconds=self.max_seconds,
            request_timeout_s=self.request_timeout_s,
        )
        method = "tokenize" if self.experiment_result.shared_tokens is not None else "unknown"
        self.fit_result = prefix_fit(self.experiment_result.shared_tokens, gran, method)
        return self.experiment_result

    def fit(self) -> PrefixFit:
        """The shared prefix against the hit unit (unknown shared length when no experiment ran)."""
        if self.fit_result is None:
            gran = self._granularity()
            self.fit_result = prefix_fit(None, gran)
        return self.fit_result

    def mismatch(self, requests_jsonl: str | None) -> MismatchReport:
        """Analyse real request bodies; token-level through /tokenize when the server offers it."""
        if not requests_jsonl:
            self.mismatch_result = MismatchReport(ok=False, reason="skipped: no requests_jsonl given")
            return self.mismatch_result
        inp = self._inputs()
        self.mismatch_result = analyse_jsonl(
            requests_jsonl,
            client=self.client if inp.reachable else None,
            unit_tokens=self._granularity().unit_tokens,
            unit_assumed=self._granularity().assumed,
            max_requests=max(2, self.max_requests * 10),  # tokenize calls are cheap next to generation
        )
        return self.mismatch_result

    def retention(self, enabled: bool = True) -> RetentionResult:
        """Does a warmed prefix survive a full KV pool of other prompts? (opt-in: it adds load)"""
        if not enabled:
            self.retention_result = RetentionResult("skipped", "retention_check=False")
            return self.retention_result
        inp = self._inputs()
        if not inp.reachable:
            self.retention_result = RetentionResult("unavailable", f"endpoint unreachable: {inp.problem}")
            return self.retention_result
        spec = self.spec or build_spec(self.client, 512, 3, tools=[])
        self.retention_result = run_retention(
            self.client,
            spec,
            self._granularity(),
            max_requests=self.max_requests,
            max_seconds=self.max_seconds,
            request_timeout_s=self.request_timeout_s,
        )
        return self.retention_result

    def decide(self) -> Verdict:
        """The verdict from everything that ran (steps not run count as not known, never as fine)."""
        inp = self._inputs()
        retention = (
            self.retention_result if self.retention_result and self.retention_result.status != "skipped" else None
        )
        self.verdict_result = decide(
            self.enablement_result or self.enablement(),
            self._granularity(),
            self.experiment_result,
            self.mismatch_result,
            retention,
            endpoint_problem=inp.problem,
        )
        return self.verdict_result

    # -- the result ---------------------------------------------------------------------------------
    def result(self) -> PrefixCacheResult:
        """Everything that ran, as runbook 04's stage result (the verdict is reached if not yet)."""
        return PrefixCacheResult(
            verdict=self.verdict_result or self.decide(),
            inputs=self.inputs_result,
            enablement=self.enablement_result,
            granularity=self.granularity_result,
            experiment=self.experiment_result,
            fit=self.fit_result,
            mismatch=self.mismatch_result,
            retention=self.retention_result,
        )

    def scraps(self) -> dict[str, Any]:
        """The result's scraps (redacted plain JSON by name); see ``PrefixCacheResult.scraps``."""
        return self.result().scraps()

    def save(self, run_dir: str | Path | None) -> Path | None:
        """Save the result as ``<run_dir>/prefix_cache/check.json`` (redacted, never over a file)."""
        return self.result().save(run_dir)


__all__ = ["FIGURES", "CheckInputs", "PrefixCacheCheck"]
