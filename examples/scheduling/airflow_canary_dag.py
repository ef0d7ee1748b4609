"""Airflow DAG: the tool-calling canary (runbook 03) every 6 hours with the papermill provider.

Install on the Airflow workers: ``apache-airflow-providers-papermill`` and this project
(the wheel: ``pip install vllm_runbooks-*.whl``; it carries the runbook templates), and set the
``VLLM_API_KEY`` variable in the workers' environment (the runbook reads the variable named by
``api_key_env``; the key never enters a parameter). Three tasks:

1. ``prepare_run_dir`` — a fresh run directory (exclusive create: never over an earlier run);
2. ``canary`` — ``PapermillOperator`` executes the installed ``03_canary_validation.ipynb`` into it;
3. ``check_verdict`` — reads the verdict the runbook glued (its ``headline`` scrap), writes a JUnit
   report beside it and fails the DAG run when the verdict is in ``FAIL_ON_VERDICT`` — the same
   contract as ``vllm-runbooks run --fail-on-verdict`` (exit 3).

The papermill operator runs the notebook only: the HTML copy and ``run.json`` that
``vllm-runbooks run`` adds are not written on this path. Where they matter, run the CLI instead
(``BashOperator`` with the command from the cron example), which does all of it.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.providers.papermill.operators.papermill import PapermillOperator

from vllm_runbooks.resources import templates_dir

try:  # Airflow 3
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.decorators import task

RUNS = os.environ.get("VLLM_RUNBOOKS_RUNS", "/var/lib/vllm-runbooks/runs")
TEMPLATE = "03_canary_validation.ipynb"  # in vllm_runbooks.resources.templates_dir()
NOTEBOOK = "03_canary_validation.ipynb"
FAIL_ON_VERDICT = ("fail",)
#: runbook 03's parameters (the same as examples/scheduling/canary.yaml); run_dir is added per run
PARAMETERS = {
    "endpoint": "http://vllm-canary.serving.svc.cluster.local:8000",
    "model": "moonshotai/Kimi-K3",
    "api_key_env": "VLLM_API_KEY",
    "tool_calls": 24,
    "tool_accuracy_threshold": 0.95,
    "request_timeout_s": 60.0,
    "step_timeout_s": 300.0,
}
RUN_DIR = "{{ ti.xcom_pull(task_ids='prepare_run_dir') }}"

with DAG(
    dag_id="vllm_runbooks_canary",
    schedule="17 */6 * * *",
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    tags=["vllm", "canary"],
) as dag:

    @task
    def prepare_run_dir() -> str:
        """A new run directory under RUNS, created exclusively."""
        from vllm_runbooks.execution.runner import new_run_dir

        return str(new_run_dir(RUNS, label="airflow"))

    canary = PapermillOperator(
        task_id="canary",
        input_nb=str(templates_dir() / TEMPLATE),
        output_nb=f"{RUN_DIR}/{NOTEBOOK}",
        parameters={**PARAMETERS, "run_dir": RUN_DIR},
        kernel_name="python3",
        log_output=True,
    )

    @task
    def check_verdict(run_dir: str) -> str:
        """Fail the DAG run on a refused verdict; leave a JUnit report for the CI view."""
        from airflow.exceptions import AirflowFailException

        from vllm_runbooks.execution.junit import write_junit
        from vllm_runbooks.execution.scraps import read_scraps

        notebook = f"{run_dir}/{NOTEBOOK}"
        headline = read_scraps(notebook).get("headline")
        entry = {"name": "canary_validation", "status": "ok", "notebook": notebook, "headline": headline}
        write_junit(f"{run_dir}/junit.xml", [entry], FAIL_ON_VERDICT)
        verdict = (headline or {}).get("verdict")
        if verdict is None or verdict in FAIL_ON_VERDICT:
            raise AirflowFailException(f"canary verdict {verdict!r} (see {notebook})")
        return verdict

    run_dir = prepare_run_dir()
    run_dir >> canary >> check_verdict(run_dir)
