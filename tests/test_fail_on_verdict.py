"""Review #11 and the suite's JUnit report: --fail-on-verdict words are checked against the
runbook's own verdict vocabulary (a misspelt word would never fire), and ``suite --junit-xml``
writes one test suite per runbook, valid against the JUnit schema."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from conftest import REPO_ROOT, TESTS_DIR
from notebook_factory import make_template
from vllm_runbooks.cli import exit_codes, main
from vllm_runbooks.cli.run import check_fail_on_verdict, verdict_table, verdict_vocabulary
from vllm_runbooks.execution.runner import RunbookError
from vllm_runbooks.stage import RESULT_MODULES, result_class

SCHEMA = xmlschema.XMLSchema(str(TESTS_DIR / "data" / "junit" / "junit.xsd"))


def test_every_runbook_has_a_vocabulary_from_its_result_class() -> None:
    for name in RESULT_MODULES:
        assert verdict_vocabulary(name) == tuple(result_class(name).VERDICTS) != ()
    assert "failing" in verdict_vocabulary("load_check") and "failed" not in verdict_vocabulary("load_check")


def test_a_word_the_runbook_never_gives_is_refused_with_the_valid_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    report = tmp_path / "r.xml"
    code = main(
        ["run", "load_check", "--run-dir", str(run_dir), "--fail-on-verdict", "failed", "--junit-xml", str(report)]
    )
    err = capsys.readouterr().err
    assert code == exit_codes.REFUSED
    assert "failed" in err and "load_check: pass degraded failing inconclusive" in err
    assert not run_dir.exists()
    SCHEMA.validate(report.read_text(encoding="utf-8"))  # a refused scheduled run is still a red test


def test_valid_words_pass_the_check() -> None:
    check_fail_on_verdict(["load_check"], ["failing", "degraded"])
    check_fail_on_verdict(["canary_validation", "load_check"], ["fail", "failing"])
    check_fail_on_verdict(["a_local_template"], ["anything"])  # no registered result: nothing to check against
    with pytest.raises(RunbookError, match="canary_validation: pass fail incomplete"):
        check_fail_on_verdict(["canary_validation"], ["failing"])


def test_suite_refuses_unknown_words_before_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params = tmp_path / "p.yaml"
    params.write_text("shared: {}\n", encoding="utf-8")
    run_dir = tmp_path / "run"
    code = main(["suite", "-f", str(params), "--run-dir", str(run_dir), "--fail-on-verdict", "failed"])
    assert code == exit_codes.REFUSED
    assert "valid words" in capsys.readouterr().err
    assert not run_dir.exists()


def test_readme_verdict_table_equals_the_code() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- verdict-words:start -->\n(.*?)\n<!-- verdict-words:end -->", readme, re.S)
    assert found, "README lacks the verdict-words table markers"
    assert found.group(1).strip() == verdict_table(), (
        "regenerate: python -c 'from vllm_runbooks.cli.run import verdict_table; print(verdict_table())'"
    )


OK_BODY = [
    "from vllm_runbooks.execution.scraps import glue",
    "glue('headline', {'runbook': 'smoke', 'verdict': 'pass', 'figures': {'steps': {'ping': 'pass', 'pong': 'fail'}}})",
]


@pytest.mark.slow
def test_suite_writes_one_junit_suite_per_runbook(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    make_template(templates, "01_smoke.ipynb", OK_BODY)
    make_template(templates, "02_boom.ipynb", ["raise RuntimeError('boom on purpose')"])
    make_template(templates, "03_talker.ipynb", ["pass"], "run_dir = None\nendpoint = 'http://127.0.0.1:8000'\n")
    params = tmp_path / "p.yaml"
    params.write_text("shared: {endpoint: null}\n", encoding="utf-8")
    report = tmp_path / "ci" / "suite.xml"
    env = {
        **os.environ,
        "VLLM_RUNBOOKS_TEMPLATES": str(templates),
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "lib"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "vllm_runbooks.cli", "suite", "-f", str(params), "--run-dir", str(tmp_path / "run"),
         "--fail-on-verdict", "pass", "--junit-xml", str(report), "--cell-timeout", "120"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == exit_codes.FAILED, proc.stderr[-2000:]
    xml = report.read_text(encoding="utf-8")
    SCHEMA.validate(xml)
    root = ET.fromstring(xml)
    assert [s.get("name") for s in root.iter("testsuite")] == ["smoke", "boom", "talker"]
    cases = {f"{s.get('name')}/{c.get('name')}": c for s in root.iter("testsuite") for c in s.iter("testcase")}
    assert cases["smoke/execution"].find("error") is None
    assert "pass" in cases["smoke/verdict"].find("failure").get("message")
    assert cases["smoke/step ping"].find("failure") is None and cases["smoke/step pong"].find("failure") is not None
    assert "boom on purpose" in cases["boom/execution"].find("error").get("message")
    assert "endpoint" in cases["talker/execution"].find("skipped").get("message")
    assert root.get("tests") == str(len(cases))
