"""Issue 8, done-when: every secret shape planted into a bundle (env, launch command, container
labels, logs incl. gzip, probe.json) is found in NO output of runbooks 01 and 02 (ipynb, HTML,
JSON, raw artefacts, stdout), nor in ``diagnose-log``'s output. Runbook 02 reads the raw logs
itself (``log_paths``), so its figure hover text is made from unredacted lines.

Review round 3 adds the shapes that still leaked (AWS session tokens, a SAS ``sig=`` in free
text, npm / Stripe / Docker tokens, proxy credentials without a scheme, ``login``/``pull -p`` in a
label) and private keys spanning lines (an env file's ``TLS_KEY=-----BEGIN …``, a label and an
``Env`` item with newlines, a log), runbook 04 reading the same launch command and log and
request bodies carrying session tokens. Every scanned output must be non-empty: a scan of empty
files would pass on anything."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from conftest import R575, R575_PLANTED
from vllm_runbooks.cli import main
from vllm_runbooks.execution import runner

SESSION_IQ = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDe2eAwsSess27abcdefghijklmnopqrstuvwxyz0123+/AB"
SESSION_FW = "FwoGZXIvYXdzEBYaDHhe2eAwsSess41LmNvbS9mb29iYXJiYXpxdXhxdXV4cXV1eA=="
SESSION_AQ = "AQoDYXdzEJre2eAwsSess49abcdefghijklmnopqrstuvwxyz0123456789+/ABCDEFGH"
ENV = [
    "NGC_API_KEY=nvapi-E2eEnvNgcKey01abcdefgh",
    "GL_TOKEN=glpat-E2eGitlabTok02abcdefgh",
    "REGISTRY_AUTH\te2eTabSecret03",
    "http_proxy=e2eproxyuser:e2eProxyPw26@proxy.corp:3128",
    f"CI_SESSION={SESSION_IQ}",
    "NPM_CFG=npm_e2eNpm28abcdefghijklmnopqrstuvwx0",
    "TLS_KEY=-----BEGIN PRIVATE KEY-----",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQe2ePemEnv29abcd",
    "Zm9vYmFyYmF6cXV4e2ePemEnv30AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
    "-----END PRIVATE KEY-----",
    "SERVICE_BUNDLE=-----BEGIN EC PRIVATE KEY-----",
    "MHcCAQEEIe2ePemEnv31xyz",
    "-----END EC PRIVATE KEY-----",
    "NCCL_E2E_AFTER_BLOCK=kept",
]
LAUNCH_PREFIX = (
    "docker login nvcr.io -u '$oauthtoken' -p e2eLaunchPw04 && docker login reg -u bob -p e2eLaunchPw05 && "
    "regctl registry login -u bob -p e2eLaunchLoginPw32 reg && "
)
LABELS = {
    "deploy.login": "docker login registry.corp -u bob -p e2eLabelPw06",
    "ops.note": "sshpass -p e2eLabelPw07 ssh gpu-node",
    "ci.pull": "registry login -u bob -p e2eLabelLoginPw33 reg && pull -p e2eLabelPullPw34 img",
    "billing": "stripe rk_live_e2eStripe35abcdefghijklmnop",
    "hub": "dckr_pat_e2eDocker36-abcdefghijklmn",
    "blob": "upload sig=e2eSas37%2Bdef%2Fghijkl%3D",
    "tls": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAe2ePemLabel38\nabcd\n-----END RSA PRIVATE KEY-----",
}
INSPECT_ENV = [
    "TLS_CERT_AND_KEY=-----BEGIN PRIVATE KEY-----\nMIIEe2ePemInspect39xyz\n-----END PRIVATE KEY-----",
    "https_proxy=u:e2eInspectProxyPw40@proxy:3128",
]
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
    f"ERROR 11-29 20:40:06 [x.py:10] sts refresh failed: {SESSION_FW}",
    "ERROR 11-29 20:40:06 [x.py:11] upload sig=e2eSas42%2Bdef%2Fghijkl%3D; npm_e2eNpm43abcdefghijklmnopqrstuvwx0",
    "ERROR 11-29 20:40:06 [x.py:12] payment sk_live_e2eStripe44abcdefghijklmnop dckr_oat_e2eDocker45-abcdefghijklmn",
    "ERROR 11-29 20:40:07 [x.py:13] proxy error: http_proxy=e2euser:e2eLogProxyPw46@proxy:3128",
    "ERROR 11-29 20:40:07 [x.py:14] -----BEGIN OPENSSH PRIVATE KEY-----",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABe2ePemLog47",
    "-----END OPENSSH PRIVATE KEY-----",
]
GZ_LINES = [
    "ERROR 11-29 20:41:00 [x.py:1] login failed: docker login -u bob -p e2eGzPw20 registry",
    "ERROR 11-29 20:41:00 [x.py:2] PASSWORD=e2eGzPw21 nvapi-E2eGzNvapi22abcdefgh",
    "ERROR 11-29 20:41:01 [x.py:3] pull -p e2eGzPullPw48 registry.corp/img failed",
    f"ERROR 11-29 20:41:01 [x.py:4] assumed role {SESSION_AQ}",
]
PROBE = {
    "probe_version": 1,
    "params": {
        "launch_command": "docker login -u bob -p e2eProbePw23 registry",
        "note": "token=e2eProbeTok24",
        "proxy": "all_proxy=u:e2eProbeProxyPw50@proxy:1080",
        "stripe": "sk_test_e2eStripe51abcdefghijklmnop",
    },
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
    # review round 3
    "e2eProxyPw26",
    SESSION_IQ,
    "e2eAwsSess27",
    "npm_e2eNpm28abcdefghijklmnopqrstuvwx0",
    "e2ePemEnv29",
    "e2ePemEnv30",
    "e2ePemEnv31",
    "e2eLaunchLoginPw32",
    "e2eLabelLoginPw33",
    "e2eLabelPullPw34",
    "rk_live_e2eStripe35abcdefghijklmnop",
    "dckr_pat_e2eDocker36-abcdefghijklmn",
    "e2eSas37%2Bdef%2Fghijkl%3D",
    "e2ePemLabel38",
    "e2ePemInspect39",
    "e2eInspectProxyPw40",
    SESSION_FW,
    "e2eAwsSess41",
    "e2eSas42%2Bdef%2Fghijkl%3D",
    "npm_e2eNpm43abcdefghijklmnopqrstuvwx0",
    "sk_live_e2eStripe44abcdefghijklmnop",
    "dckr_oat_e2eDocker45-abcdefghijklmn",
    "e2eLogProxyPw46",
    "e2ePemLog47",
    "e2eGzPullPw48",
    SESSION_AQ,
    "e2eAwsSess49",
    "e2eProbeProxyPw50",
    "sk_test_e2eStripe51abcdefghijklmnop",
]
# Runbook 04's request bodies (read only by it): session tokens right before the per-request
# difference, so the snippet cut next to it would show them.
REQUEST_SECRETS = [
    "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDe2eAwsSess52Qx7Lm9Vt3Rk8Zp2Wn6Yh4Jd1Fs5Gc0Bv",
    "FwoGZXIvYXdzEBYaDHhe2eAwsSess53LmNvbS9mb29iYXJiYXpxdXhxdXV4cXV1eA==",
    "e2eAwsSess52",
    "e2eAwsSess53",
]


def _plant(bundle: Path) -> None:
    env = (bundle / "env.txt").read_text(encoding="utf-8")
    sep = "" if env.endswith("\n") else "\n"  # each planted line its own variable, not the last one's value
    (bundle / "env.txt").write_text(env + sep + "".join(f"{line}\n" for line in ENV), encoding="utf-8")
    launch = (bundle / "launch-command.txt").read_text(encoding="utf-8")
    (bundle / "launch-command.txt").write_text(LAUNCH_PREFIX + launch, encoding="utf-8")
    inspect = json.loads((bundle / "container-inspect.json").read_text(encoding="utf-8"))
    inspect[0]["Config"]["Labels"] = LABELS
    inspect[0]["Config"]["Env"] = list(inspect[0]["Config"].get("Env") or []) + INSPECT_ENV
    (bundle / "container-inspect.json").write_text(json.dumps(inspect, indent=2), encoding="utf-8")
    logs = (bundle / "container-logs.txt").read_text(encoding="utf-8")
    head, _, rest = logs.partition("\n")
    (bundle / "container-logs.txt").write_text(head + "\n" + "\n".join(LOG_LINES) + "\n" + rest, encoding="utf-8")
    (bundle / "logs").mkdir(exist_ok=True)
    (bundle / "logs" / "serve.log.gz").write_bytes(gzip.compress(("\n".join(GZ_LINES) + "\n").encode()))
    (bundle / "probe.json").write_text(json.dumps(PROBE), encoding="utf-8")


def _leaks(text: bytes, secrets: list[str] = SECRETS) -> list[str]:
    return [s for s in secrets if s.encode() in text]


def _requests_jsonl(path: Path) -> Path:
    """Chat requests for runbook 04 whose system prompts differ by a timestamp right after two tokens."""
    rest = " You are the support assistant of the platform team. " + "Answer briefly. " * 40
    lines = []
    for i in range(4):
        system = f"Creds {REQUEST_SECRETS[0]} {REQUEST_SECRETS[1]} at 2026-11-29T10:0{i}:00Z.{rest}"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": "q"}]
        lines.append({"model": "m", "messages": messages})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _scan(root: Path, secrets: list[str]) -> list[Path]:
    """Every file under ``root``, each asserted non-empty (but run.json's lock) and holding none of ``secrets``."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    assert files
    empty = [p.relative_to(root).as_posix() for p in files if p.stat().st_size == 0 and p.name != ".run.lock"]
    assert not empty, empty
    leaks = {p.relative_to(root).as_posix(): _leaks(p.read_bytes(), secrets) for p in files}
    assert not {k: v for k, v in leaks.items() if v}
    return files


def test_capture_of_the_planted_bundle_stores_no_secret(tmp_path: Path) -> None:
    """The fast part of the battery: runbook 01's capture (raw artefacts, evidence.json) alone."""
    bundle = tmp_path / "bundle"
    shutil.copytree(R575, bundle)
    _plant(bundle)
    from vllm_runbooks.evidence import collect_evidence

    ev = collect_evidence(bundle, run_dir=tmp_path / "run", launch_command=LAUNCH_PREFIX + "vllm serve k3")
    assert ev.verdict() == "complete", ev.unavailable()
    files = _scan(tmp_path / "run", SECRETS)
    stored = {p.relative_to(tmp_path / "run" / "evidence").as_posix() for p in files}
    assert {"raw/env.txt", "raw/container-inspect.json", "raw/probe.json", "evidence.json"} <= stored, stored
    logs = [s for s in stored if s.startswith("raw/logs/")]
    assert any("container-logs" in s for s in logs) and any("serve.log" in s for s in logs), stored
    env = (tmp_path / "run" / "evidence" / "raw" / "env.txt").read_text(encoding="utf-8")
    assert "TLS_KEY=<redacted:secret>" in env and "NCCL_E2E_AFTER_BLOCK=kept" in env
    assert "http_proxy=<redacted:url-credentials>@proxy.corp:3128" in env
    assert ev.items["launch"].value["env"]["NCCL_E2E_AFTER_BLOCK"] == "kept"


@pytest.mark.slow
def test_every_planted_shape_stays_out_of_every_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(R575, bundle)
    _plant(bundle)
    planted = b"".join(p.read_bytes() for p in bundle.rglob("*") if p.is_file() and p.suffix != ".gz")
    planted += gzip.decompress((bundle / "logs" / "serve.log.gz").read_bytes())
    assert set(_leaks(planted)) == set(SECRETS)  # every shape really is in the bundle

    jsonl = _requests_jsonl(tmp_path / "requests.jsonl")
    assert set(_leaks(jsonl.read_bytes(), REQUEST_SECRETS)) == set(REQUEST_SECRETS)
    # Runbook 04's startup log: every planted log line, the one past the line cap included (a nested
    # record is written through its own to_dict, which stores the log's length, not the log).
    startup = tmp_path / "startup.log"
    startup.write_text("\n".join(LOG_LINES + GZ_LINES) + "\n")

    run_dir = tmp_path / "run"
    raw_logs = [str(bundle / "container-logs.txt"), str(bundle / "logs" / "serve.log.gz")]
    launch = LAUNCH_PREFIX + "vllm serve k3"
    sections = {
        "evidence_capture": {"source": str(bundle), "launch_command": launch},
        "compatibility_decision": {"log_paths": raw_logs},
        "prefix_cache_check": {
            "endpoint": "http://127.0.0.1:9",  # nothing listens: the check reads its inputs only
            "request_timeout_s": 2.0,
            "requests_jsonl": str(jsonl),
            "launch_command": launch,
            "log_path": str(startup),
        },
    }
    results = [runner.run_runbook(name, params, run_dir) for name, params in sections.items()]
    assert [r.status for r in results] == ["ok", "ok", "ok"], [r.error for r in results]
    for r in results:
        print(r.to_json())
    files = _scan(run_dir, SECRETS + REQUEST_SECRETS)
    kinds = {p.suffix for p in files}
    assert {".ipynb", ".html", ".json"} <= kinds
    names = {p.relative_to(run_dir).as_posix() for p in files}
    assert {"evidence/raw/env.txt", "04_prefix_cache_check.ipynb", "prefix_cache/check.json"} <= names, names
    nb02 = (run_dir / "02_compatibility_decision.ipynb").read_text(encoding="utf-8")
    assert "application/vnd.plotly.v1+json" in nb02  # the log timeline (hover text) is there
    check = (run_dir / "prefix_cache" / "check.json").read_text(encoding="utf-8")
    assert "aws-session-token>" in check  # the request file was read: its snippet shows the marker
    nb04 = (run_dir / "04_prefix_cache_check.ipynb").read_text(encoding="utf-8")
    for token in REQUEST_SECRETS[:2]:  # a snippet is a cut: not even a piece of a token
        pieces = [token[i : i + 12] for i in range(len(token) - 11)]
        assert not [p for p in pieces if p in check or p in nb04], token
    assert not _leaks(capsys.readouterr().out.encode(), SECRETS + REQUEST_SECRETS)


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
