"""examples/scheduling: every scheduler's command is one the CLI accepts, for a runbook that exists,
with parameters it declares and verdicts it can give; the Dockerfile runs what the README says.

Nothing here starts a scheduler: cron, systemd, Kubernetes and Airflow are not on this machine.
What can be checked is that the files parse and agree with the runbooks; the Airflow DAG is
imported when the papermill provider is installed and skipped with the reason otherwise.
"""

from __future__ import annotations

import ast
import configparser
import importlib
import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO_ROOT
from vllm_runbooks.cli import build_parser
from vllm_runbooks.execution.parameters import coerce_cli_value, load_param_file
from vllm_runbooks.execution.templates import available_runbooks, declared_parameters
from vllm_runbooks.redact import redact_parameters
from vllm_runbooks.resources import templates_dir

EXAMPLES = REPO_ROOT / "examples" / "scheduling"
CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")
OPERATOR_MODULE = "airflow.providers.papermill.operators.papermill"


#: Where the host and image examples install a file of this folder → the file here.
INSTALLED_FILES = {"/etc/vllm-runbooks/canary.yaml": EXAMPLES / "canary.yaml"}


def vocabulary(runbook: str) -> tuple[str, ...]:
    """The verdicts a runbook can give, from its registered result class."""
    from vllm_runbooks import stage

    module = stage.RESULT_MODULES.get(runbook)
    if module:
        importlib.import_module(module)
    cls = stage.RESULTS_BY_RUNBOOK.get(runbook)
    if cls is None:
        pytest.fail(f"{runbook}: no registered result class, so its verdict vocabulary is unknown")
    return tuple(cls.VERDICTS)


def check_run_command(argv: list[str], where: str, param_file: dict[str, Any] | None = None) -> Any:
    """Parse ``vllm-runbooks ARGV`` with the real parser and check it against the runbook."""
    args = build_parser().parse_args(argv)
    assert args.command == "run", where
    books = available_runbooks()
    assert args.name in books, f"{where}: no runbook {args.name!r}"
    declared = {p.name for p in declared_parameters(books[args.name])}
    given: dict[str, Any] = {}
    if args.parameters_file:
        path = INSTALLED_FILES.get(args.parameters_file, REPO_ROOT / args.parameters_file)
        given.update(param_file if param_file is not None else load_param_file(path))
    given.update({k: coerce_cli_value(v) for k, v in args.parameter})
    given.update(dict(args.raw_parameter))
    assert set(given) <= declared, f"{where}: {sorted(set(given) - declared)} not declared by {args.name}"
    assert args.fail_on_verdict, f"{where}: a scheduled run without --fail-on-verdict never fails on a verdict"
    unknown = set(args.fail_on_verdict) - set(vocabulary(args.name))
    assert not unknown, f"{where}: {args.name} never gives verdict(s) {sorted(unknown)}"
    assert args.junit_xml, f"{where}: no --junit-xml report"
    return args


def _after_executable(command: str) -> list[str]:
    words = shlex.split(command)
    start = next(i for i, w in enumerate(words) if w.endswith("vllm-runbooks") and i + 1 < len(words))
    return words[start + 1 :]


def test_parameters_file_matches_the_runbook() -> None:
    params = load_param_file(EXAMPLES / "canary.yaml")
    declared = {p.name: p for p in declared_parameters(available_runbooks()["canary_validation"])}
    assert set(params) <= set(declared)
    assert params["api_key_env"] == "VLLM_API_KEY"  # the variable's name; the key itself is never in a file
    assert redact_parameters(dict(params)) == params, "a parameter looks like a secret"


def test_cron_line() -> None:
    lines = [
        ln
        for ln in (EXAMPLES / "vllm-runbooks.cron").read_text().splitlines()
        if ln.strip() and not ln.startswith("#") and "=" not in ln.split()[0]
    ]
    assert len(lines) == 1
    fields = lines[0].split(None, 6)
    assert all(CRON_FIELD.match(f) for f in fields[:5]), fields[:5]
    assert fields[5] == "vllm-runbooks"  # /etc/cron.d lines name the user
    command = fields[6].split("&&")[-1]
    check_run_command(_after_executable(command), "cron")


def test_systemd_timer_and_service() -> None:
    service = configparser.ConfigParser(strict=False, interpolation=None)
    service.read_string((EXAMPLES / "vllm-runbooks-canary.service").read_text())
    assert service["Service"]["Type"] == "oneshot"
    check_run_command(_after_executable(service["Service"]["ExecStart"]), "systemd")
    timer = configparser.ConfigParser(strict=False, interpolation=None)
    timer.read_string((EXAMPLES / "vllm-runbooks-canary.timer").read_text())
    assert timer["Timer"]["Unit"] == "vllm-runbooks-canary.service"
    assert re.fullmatch(r"\*-\*-\* \d\d/\d+:\d\d:\d\d", timer["Timer"]["OnCalendar"])
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_kubernetes_cronjobs() -> None:
    docs = [d for d in yaml.safe_load_all((EXAMPLES / "kubernetes-cronjob.yaml").read_text()) if d]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        assert doc["apiVersion"] and doc["metadata"]["name"]
        by_kind.setdefault(doc["kind"], []).append(doc)
    config = yaml.safe_load(by_kind["ConfigMap"][0]["data"]["canary.yaml"])
    assert config == load_param_file(EXAMPLES / "canary.yaml"), "ConfigMap and canary.yaml drifted apart"
    claims = {c["metadata"]["name"] for c in by_kind["PersistentVolumeClaim"]}
    names = []
    for job in by_kind["CronJob"]:
        assert (
            all(CRON_FIELD.match(f) for f in job["spec"]["schedule"].split())
            and len(job["spec"]["schedule"].split()) == 5
        )
        spec = job["spec"]["jobTemplate"]["spec"]
        assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] > 0
        pod = spec["template"]["spec"]
        assert pod["restartPolicy"] == "Never"
        assert {
            v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v
        } <= claims
        container = pod["containers"][0]
        args = check_run_command(container["args"], job["metadata"]["name"], config)
        names.append(args.name)
        for env in container.get("env", []):  # the key comes from a Secret, never a literal
            assert "value" not in env or "KEY" not in env["name"]
    assert names == ["canary_validation", "validation_history"]


def _dag_tree() -> ast.Module:
    return ast.parse((EXAMPLES / "airflow_canary_dag.py").read_text())


def _dag_constant(name: str) -> Any:
    for node in _dag_tree().body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"no {name} in the DAG")


def test_airflow_dag_agrees_with_the_runbook() -> None:
    imports = {n.module for n in ast.walk(_dag_tree()) if isinstance(n, ast.ImportFrom)}
    assert OPERATOR_MODULE in imports
    template = templates_dir() / _dag_constant("TEMPLATE")
    assert template.is_file() and template == available_runbooks()["canary_validation"]
    assert _dag_constant("PARAMETERS") == load_param_file(EXAMPLES / "canary.yaml")
    assert set(_dag_constant("FAIL_ON_VERDICT")) <= set(vocabulary("canary_validation"))


def test_airflow_dag_imports_with_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("airflow") is None or importlib.util.find_spec(OPERATOR_MODULE) is None:
        pytest.skip(f"{OPERATOR_MODULE} not installed (pip install apache-airflow-providers-papermill)")
    spec = importlib.util.spec_from_file_location("vllm_runbooks_canary_dag", EXAMPLES / "airflow_canary_dag.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert {t.task_id for t in module.dag.tasks} == {"prepare_run_dir", "canary", "check_verdict"}


def _readme_block(marker: str) -> list[str]:
    text = (EXAMPLES / "README.md").read_text()
    match = re.search(rf"<!-- {marker}[^>]*-->\s*```sh\n(.*?)```", text, re.S)
    assert match, f"README has no {marker} block"
    return [ln for ln in match.group(1).splitlines() if ln.strip()]


def test_dockerfile_runs_the_readmes_commands() -> None:
    lines = (EXAMPLES / "Dockerfile").read_text().splitlines()
    runs = [ln[len("RUN ") :].strip() for ln in lines if ln.startswith("RUN ")]
    assert runs == _readme_block("dockerfile-commands")
    entry = json.loads(next(ln for ln in lines if ln.startswith("ENTRYPOINT "))[len("ENTRYPOINT ") :])
    cmd = json.loads(next(ln for ln in lines if ln.startswith("CMD "))[len("CMD ") :])
    assert Path(entry[0]).name == "vllm-runbooks" and len(entry) == 1
    (readme_command,) = _readme_block("canary-command")
    assert cmd == _after_executable(readme_command)
    # The image carries no checkout: the parameters file is the one COPY puts where CMD reads it.
    copies = dict(reversed(ln.split()[1:3]) for ln in lines if ln.startswith("COPY examples/"))
    args = build_parser().parse_args(cmd)
    assert args.parameters_file in copies, "the CMD's parameters file is not copied into the image"
    check_run_command(cmd, "Dockerfile", load_param_file(REPO_ROOT / copies[args.parameters_file]))
    assert any("pip install" in run and ".whl" in run for run in runs), "the image installs the wheel"
    assert not any(" -e " in f" {run} " for run in runs), "an editable install ties the image to a checkout"
    ignored = (EXAMPLES / "Dockerfile.dockerignore").read_text().split()
    assert {".venv", "runs", ".git"} <= set(ignored)
