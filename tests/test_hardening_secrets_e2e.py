"""Issue 8, done-when: every secret shape planted into a bundle (env, launch command, container
labels, logs incl. gzip, probe.json) is found in NO output of runbooks 01 and 02 (ipynb, HTML,
JSON, raw artefacts, stdout), nor in ``diagnose-log``'s output. Runbook 02 reads the raw logs
itself (``log_paths``), so its figure hover text is made from unredacted lines."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from conftest import R575, R575_PLANTED
from vllm_runbooks.cli import main
from vllm_runbooks.execution import runner

ENV = [
    "NGC_API_KEY=nvapi-E2eEnvNgcKey01abcdefgh",
    "GL_TOKEN=glpat-E2eGitlabTok02abcdefgh",
    "REGISTRY_AUTH\te2eTabSecret03",
]
LAUNCH_PREFIX = "docker login nvcr.io -u '$oauthtoken' -p e2eLaunchPw04 && docker login reg -u bob -p e2eLaunchPw05 && "
LABELS = {
    "deploy.login": "docker login registry.corp -u bob -p e2eLabelPw06",
    "ops.note": "sshpass -p e2eLabelPw07 ssh gpu-node",
}
LOG_LINES = [
    'ERROR 11-29 20:40:01 [cfg.py:1] bad config {\\"api_key\\": \\"e2eJsonEsc08\\", \\"n\\": 1}',
    "ERROR 11-29 20:40:01 [x.py:2] -----BEGIN PGP PRIVATE KEY BLOCK-----",
    "lQOYBGe2ePgpBody09AAAA",
    "=e2eP",
    "-----END PGP PRIVATE KEY BLOCK-----",
    "ERROR 11-29 20:40:02 [x.py:3] failed: curl -u bob:e2eCurlPw10 https://hf-mirror.corp/x",
    "ERROR 11-29 20:40:02 [x.py:4] failed: mysql -h db -pe2eMysqlPw11 shop; redis-cli -a e2eRedisPw12 ping",
    "ERROR 11-29 20:40:03 [x.py:5] failed: KEY\te2eTabKey13",
    "ERROR 11-29 20:40:03 [x.py:6] endpoint http://e2eUserTok14abcdef@gpu-node:8000/v1 refused",
    "ERROR 11-29 20:40:04 [api_server.py:1] args: {'model': 'k3', 'api_key': ['e2eHoverKey15']}",
    "ERROR 11-29 20:40:04 [x.py:7] failed: Authorization: Bearer e2eBearer16abcdef sk-e2eSkKey17abcdefghijk",
    "ERROR 11-29 20:40:05 [x.py:8] failed: " + "x " * 33000 + "e2eCutTokenHead18" + "Q" * 9000,
    "ERROR 11-29 20:40:05 [x.py:9] nvapi-E2eBareNvapi19abcdefgh",
]
GZ_LINES = [
    "ERROR 11-29 20:41:00 [x.py:1] login failed: docker login -u bob -p e2eGzPw20 registry",
    "ERROR 11-29 20:41:00 [x.py:2] PASSWORD=e2eGzPw21 nvapi-E2eGzNvapi22abcdefgh",
]
PROBE = {
    "probe_version": 1,
    "params": {"launch_command": "docker login -u bob -p e2eProbePw23 registry", "note": "token=e2eProbeTok24"},
    "captures": {"cuda-probe.txt": {"status": "unavailable", "reason": "sshpass -p e2eProbePw25 failed"}},
    "logs": {},
}
SECRETS = [
    *R575_PLANTED,
    "nvapi-E2eEnvNgcKey01abcdefgh",
    "glpat-E2eGitlabTok02abcdefgh",
    "e2eTabSecret03",
    "e2eLaunchPw04",
    "e2eLaunchPw05",
    "e2eLabelPw06",
    "e2eLabelPw07",
    "e2eJsonEsc08",
    "e2ePgpBody09",
    "e2eCurlPw10",
    "e2eMysqlPw11",
    "e2eRedisPw12",
    "e2eTabKey13",
    "e2eUserTok14abcdef",
    "e2eHoverKey15",
    "e2eBearer16abcdef",
    "sk-e2eSkKey17abcdefghijk",
    "e2eCutTokenHead18",
    "nvapi-E2eBareNvapi19abcdefgh",
    "e2eGzPw20",
    "e2eGzPw21",
    "nvapi-E2eGzNvapi22abcdefgh",
    "e2eProbePw23",
    "e2eProbeTok24",
    "e2eProbePw25",
]


def _plant(bundle: Path) -> None:
    with open(bundle / "env.txt", "a", encoding="utf-8") as f:
        f.write("".join(f"{line}\n" for line in ENV))
    launch = (bundle / "launch-command.txt").read_text(encoding="utf-8")
    (bundle / "launch-command.txt").write_text(LAUNCH_PREFIX + launch, encoding="utf-8")
    inspect = json.loads((bundle / "container-inspect.json").read_text(encoding="utf-8"))
    inspect[0]["Config"]["Labels"] = LABELS
    (bundle / "container-inspect.json").write_text(json.dumps(inspect, indent=2), encoding="utf-8")
    logs = (bundle / "container-logs.txt").read_text(encoding="utf-8")
    head, _, rest = logs.partition("\n")
    (bundle / "container-logs.txt").write_text(head + "\n" + "\n".join(LOG_LINES) + "\n" + rest, encoding="utf-8")
    (bundle / "logs").mkdir(exist_ok=True)
    (bundle / "logs" / "serve.log.gz").write_bytes(gzip.compress(("\n".join(GZ_LINES) + "\n").encode()))
    (bundle / "probe.json").write_text(json.dumps(PROBE), encoding="utf-8")


def _leaks(text: bytes) -> list[str]:
    return [s for s in SECRETS if s.encode() in text]


@pytest.mark.slow
def test_every_planted_shape_stays_out_of_every_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(R575, bundle)
    _plant(bundle)
    planted = b"".join(p.read_bytes() for p in bundle.rglob("*") if p.is_file() and p.suffix != ".gz")
    planted += gzip.decompress((bundle / "logs" / "serve.log.gz").read_bytes())
    assert set(_leaks(planted)) == set(SECRETS)  # every shape really is in the bundle

    run_dir = tmp_path / "run"
    raw_logs = [str(bundle / "container-logs.txt"), str(bundle / "logs" / "serve.log.gz")]
    sections = {
        "evidence_capture": {"source": str(bundle), "launch_command": LAUNCH_PREFIX + "vllm serve k3"},
        "compatibility_decision": {"log_paths": raw_logs},
    }
    results = [runner.run_runbook(name, params, run_dir) for name, params in sections.items()]
    assert [r.status for r in results] == ["ok", "ok"], [r.error for r in results]
    for r in results:
        print(r.to_json())
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    kinds = {p.suffix for p in files}
    assert {".ipynb", ".html", ".json"} <= kinds
    nb02 = (run_dir / "02_compatibility_decision.ipynb").read_text(encoding="utf-8")
    assert "application/vnd.plotly.v1+json" in nb02  # the log timeline (hover text) is there
    leaks = {p.relative_to(run_dir).as_posix(): _leaks(p.read_bytes()) for p in files}
    assert not {k: v for k, v in leaks.items() if v}
    assert not _leaks(capsys.readouterr().out.encode())


def test_diagnose_log_output_holds_no_planted_secret(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(R575, bundle)
    _plant(bundle)
    for fmt in ("json", "text"):
        logs = [str(bundle / "container-logs.txt"), str(bundle / "logs" / "serve.log.gz")]
        main(["diagnose-log", "--format", fmt, *logs])
        out = capsys.readouterr().out
        assert "driver" in out
        # the planted gzip log was read (decompressed) and its secret-bearing lines shown, redacted
        assert "login failed: docker login -u bob -p <redacted:" in out, fmt
        assert "PASSWORD=<redacted:" in out, fmt
        assert not _leaks(out.encode()), fmt
