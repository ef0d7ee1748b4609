"""The user path leaks nothing: runbooks 01 and 02 through ``runner.run_runbook`` on a bundle with
planted secrets, given raw (un-redacted) parameters, and every file of the run directory scanned.

Unlike ``test_evidence_runbook``, nothing here redacts on the test's behalf: the parameters go to
the runner as a user would type them, and the HTML is the runner's own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import R575, R575_PLANTED
from vllm_runbooks.execution import runner
from vllm_runbooks.execution.scraps import read_scraps

# Already in the sample bundle (env.txt, launch-command.txt, container-inspect.json).
BUNDLE_SECRETS = list(R575_PLANTED)
ENV_SECRETS = {
    "PGPASSWORD": "envPgScan01",
    "MYSQL_PWD": "envMysqlScan02",
    "DATABASE_URL": "redis://:envRedisScan03@cache.corp.example:6379/0",
}
LAUNCH_SECOND_KEY = "launchSecondKey04"
INSPECT_SECRETS = {"PGPASSWORD": "inspectPgScan05", "REGISTRY_PASSWD": "inspectPasswdScan06"}
LOG_LINES = [
    "(APIServer pid=1) INFO 11-29 20:40:01 [api_server.py:1] non-default args: "
    "{'model': 'moonshotai/Kimi-K3', 'api_key': ['argsKeyOne07', 'argsKeyTwo08'], 'tensor_parallel_size': 8}",
    "(APIServer pid=1) DEBUG curl -H 'Authorization: Bearer bearerScanToken09abc' -H 'X-API-Key: headerScan10' "
    "https://svc:urlScanPw11@hf-mirror.corp.example/api/models",
    "(APIServer pid=1) DEBUG env PGPASSWORD=logPgScan12 HF_TOKEN=hf_LogScanAAAAAAAAAAAAAAAAAAAA13 "
    "aws AKIAJSCANLOGKEY14XYZ",
    "(APIServer pid=1) DEBUG redis://:logRedisScan15@cache:6379 and https://bob:p@ssScan16@proxy.example/x",
    "(APIServer pid=1) DEBUG Namespace(api_key=['nsKeyOne17', 'nsKeyTwo18'], port=8000)",
]
PARAM_KEYS = ["paramScanKey19", "paramScanKey20"]

PLANTED = [
    *BUNDLE_SECRETS,
    "envPgScan01",
    "envMysqlScan02",
    "envRedisScan03",
    LAUNCH_SECOND_KEY,
    "inspectPgScan05",
    "inspectPasswdScan06",
    "argsKeyOne07",
    "argsKeyTwo08",
    "bearerScanToken09abc",
    "headerScan10",
    "urlScanPw11",
    "logPgScan12",
    "hf_LogScanAAAAAAAAAAAAAAAAAAAA13",
    "AKIAJSCANLOGKEY14XYZ",
    "logRedisScan15",
    "ssScan16",
    "nsKeyOne17",
    "nsKeyTwo18",
    *PARAM_KEYS,
]


def _plant(bundle: Path) -> None:
    with open(bundle / "env.txt", "a", encoding="utf-8") as f:
        f.write("".join(f"{k}={v}\n" for k, v in ENV_SECRETS.items()))
    launch = (bundle / "launch-command.txt").read_text(encoding="utf-8").rstrip("\n")
    assert launch.endswith("--api-key sk-k3canary-9f8e7d6c5b4a3f2e1d0c")
    (bundle / "launch-command.txt").write_text(f"{launch} {LAUNCH_SECOND_KEY}\n", encoding="utf-8")
    inspect = json.loads((bundle / "container-inspect.json").read_text(encoding="utf-8"))
    inspect[0]["Config"]["Env"] += [f"{k}={v}" for k, v in INSPECT_SECRETS.items()]
    inspect[0]["Args"] += [LAUNCH_SECOND_KEY]
    (bundle / "container-inspect.json").write_text(json.dumps(inspect, indent=2), encoding="utf-8")
    logs = (bundle / "container-logs.txt").read_text(encoding="utf-8")
    head, _, rest = logs.partition("\n")
    (bundle / "container-logs.txt").write_text(head + "\n" + "\n".join(LOG_LINES) + "\n" + rest, encoding="utf-8")


@pytest.mark.slow
def test_user_path_leaks_no_planted_secret(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(R575, bundle)
    _plant(bundle)
    raw_bytes = b"".join(p.read_bytes() for p in bundle.rglob("*") if p.is_file())
    for s in PLANTED[:-2]:
        assert s.encode() in raw_bytes, f"{s} was not planted"

    run_dir = tmp_path / "run"
    launch = (
        "HF_TOKEN=hf_kQ7pLm2XvR9tYw4ZsB8nC3dF6gH1jK5aE0uI vllm serve moonshotai/Kimi-K3 "
        f"--tensor-parallel-size 8 --api-key {PARAM_KEYS[0]} {PARAM_KEYS[1]} --port 8000"
    )
    sections = {
        "evidence_capture": {"source": str(bundle), "launch_command": launch, "collector_timeout_s": 60},
        "compatibility_decision": {},
    }
    results = [runner.run_runbook(name, params, run_dir) for name, params in sections.items()]
    assert [r.status for r in results] == ["ok", "ok"], [r.error for r in results]
    assert results[0].headline and results[0].headline["verdict"] == "complete"

    files = [p for p in run_dir.rglob("*") if p.is_file()]
    names = {p.relative_to(run_dir).as_posix() for p in files}
    assert {
        "01_evidence_capture.ipynb",
        "01_evidence_capture.html",
        "02_compatibility_decision.ipynb",
        "02_compatibility_decision.html",
        "run.json",
        "evidence/evidence.json",
        "evidence/SHA256SUMS",
        "evidence/raw/env.txt",
        "evidence/raw/container-inspect.json",
    } <= names, sorted(names)
    assert any(n.startswith("evidence/raw/logs/") for n in names)
    leaks = [(s, p.relative_to(run_dir).as_posix()) for p in files for s in PLANTED if s.encode() in p.read_bytes()]
    assert not leaks, leaks

    # the redaction left what the runbooks need, and what was removed is marked
    raw = run_dir / "evidence" / "raw"
    assert "PGPASSWORD=<redacted:secret>" in (raw / "env.txt").read_text()
    log = next((raw / "logs").iterdir()).read_text()
    assert "'api_key': ['<redacted:secret>']" in log and "'tensor_parallel_size': 8" in log
    evidence = json.loads((run_dir / "evidence" / "evidence.json").read_text())
    assert (
        "--api-key <redacted:api-key> <redacted:api-key> --port 8000" in evidence["items"]["launch"]["value"]["command"]
    )

    # log findings keep their signature (it used to be replaced by <redacted:secret>)
    scraps = read_scraps(run_dir / "02_compatibility_decision.ipynb")
    findings = [f for item in scraps["log_diagnosis"]["items"] for f in item["findings"]]
    assert findings, scraps["log_diagnosis"]
    signatures = {f["signature"] for f in findings}
    assert "torch_driver_too_old" in signatures, signatures
    assert all(isinstance(s, str) and s and "<redacted" not in s for s in signatures), signatures
    assert all(isinstance(f["line"], int) and isinstance(f["priority"], int) for f in findings)
