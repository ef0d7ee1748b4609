"""Review round 3: secrets that still reached stored evidence, and the words that must survive.

Item 5: a private key in an env file (``env`` prints it as ``NAME=-----BEGIN …`` and then the key's
lines) was redacted one ``KEY=VALUE`` line at a time, so its body was stored in clear. Every path
that redacts text line by line now shares one key-block state (``redact._PemState``).
Item 13: token shapes and places that leaked. Low: a known API key masked only as typed.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from conftest import R575
from vllm_runbooks import probe, redact
from vllm_runbooks.evidence import collect_evidence
from vllm_runbooks.redact import LineRedactor, redact_argv, redact_env, redact_obj, redact_text

PEM_BODY = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7r3PemBodyOne01x",
    "Zm9vYmFyYmF6cXV4r3PemBodyTwo02AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
    "r3PemBodyThree03",
]
PEM_ENV = "\n".join(
    [
        "NCCL_DEBUG=INFO",
        "TLS_KEY=-----BEGIN PRIVATE KEY-----",
        *PEM_BODY,
        "-----END PRIVATE KEY-----",
        "CUDA_VISIBLE_DEVICES=0,1",
    ]
)
# the same block under a name that says nothing (a certificate bundle with its key)
PLAIN_NAME_ENV = PEM_ENV.replace("TLS_KEY=", "SERVICE_BUNDLE=").replace("PRIVATE KEY", "EC PRIVATE KEY")
PEM_SECRETS = ["r3PemBodyOne01", "r3PemBodyTwo02", "r3PemBodyThree03"]


def _no_pem_body(out: str) -> None:
    for s in PEM_SECRETS:
        assert s not in out, out
    assert "NCCL_DEBUG=INFO" in out and "CUDA_VISIBLE_DEVICES=0,1" in out


# -- item 5: key blocks in env files and every other multi-line path --------------------------------
@pytest.mark.parametrize("env", [PEM_ENV, PLAIN_NAME_ENV], ids=["secret-name", "plain-name"])
def test_private_key_block_in_env_file_is_not_stored(env: str) -> None:
    out = probe.redact_bytes("env.txt", env.encode()).decode()
    _no_pem_body(out)
    assert probe.redact_bytes("env.txt", out.encode()).decode() == out  # idempotent
    assert redact.redact_env_text(env) == out  # the one env-file redaction, probe and package alike


def test_private_key_in_proc_environ_with_newlines_in_the_value() -> None:
    """``/proc/PID/environ`` is NUL-separated; the probe turns NULs into newlines before redacting."""
    environ = PEM_ENV.replace("\nCUDA_VISIBLE", "\0CUDA_VISIBLE").replace("INFO\n", "INFO\0")
    _no_pem_body(probe.redact_bytes("environ", environ.encode()).decode())
    _no_pem_body(probe.redact_bytes("env.txt", environ.replace("\0", "\n").encode()).decode())


def test_continuation_lines_of_a_secret_variable_are_not_stored() -> None:
    env = "NCCL_DEBUG=INFO\nDEPLOY_SECRET=first line\nr3SecretSecondLine04 of the value\nCUDA_VISIBLE_DEVICES=0,1"
    out = redact.redact_env_text(env)
    assert "r3SecretSecondLine04" not in out and "first line" not in out
    assert "DEPLOY_SECRET=<redacted:secret>" in out
    _no_pem_body(out)


def test_private_key_env_file_through_a_bundle_capture(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(R575, bundle)
    with open(bundle / "env.txt", "a", encoding="utf-8") as f:
        f.write(PEM_ENV + "\n")
    collect_evidence(bundle, run_dir=tmp_path / "run")
    stored = (tmp_path / "run" / "evidence" / "raw" / "env.txt").read_text(encoding="utf-8")
    assert "TLS_KEY=" in stored and "NCCL_DEBUG=INFO" in stored
    blob = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    for s in PEM_SECRETS:
        assert s.encode() not in blob, s


def test_every_multi_line_path_carries_the_key_block() -> None:
    """Logs, command output, JSON values with newlines, env dicts and argv: one mechanism, one answer."""
    text = "before\n" + PEM_ENV + "\nafter"
    streamed = LineRedactor()
    many = LineRedactor()
    outs = {
        "text": redact_text(text),
        "lines": "\n".join(streamed(line) for line in text.split("\n")),
        "many": "\n".join(many.many([(line, None) for line in text.split("\n")])),
        "command output": probe.redact_bytes("nvidia-smi.txt", text.encode()).decode(),
        "json value": probe.redact_bytes(
            "container-inspect.json", json.dumps([{"Labels": {"x": text}}]).encode()
        ).decode(),
        "env list": json.dumps(redact_obj({"Env": text.split("\n")[1:]})),
        "env dict": json.dumps(redact_env({"SERVICE_BUNDLE": "\n".join(text.split("\n")[2:-2])})),
        "argv": json.dumps(redact_argv(["sh", "-c", text])),
    }
    for where, out in outs.items():
        for s in PEM_SECRETS:
            assert s not in out, (where, out)
    assert outs["lines"] == outs["text"] == outs["many"]


def test_env_list_of_container_inspect_with_the_key_in_following_items() -> None:
    """``docker inspect``'s ``Env`` list: the key block is one item with newlines, or (a bundle
    written by hand) spread over the items that follow its BEGIN line."""
    spread = [line for line in PEM_ENV.split("\n")]
    out = json.dumps(redact_obj({"Config": {"Env": spread}}))
    for s in PEM_SECRETS:
        assert s not in out, out
    assert "NCCL_DEBUG=INFO" in out and "CUDA_VISIBLE_DEVICES=0,1" in out


# -- item 13: shapes that leaked ---------------------------------------------------------------------
SESSION_IQ = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDr3AwsSession05Qx7Lm9Vt3Rk8Zp2Wn6Yh4Jd1+/Fs5G"
SESSION_FW = "FwoGZXIvYXdzEBYaDHhr3AwsSession06LmNvbS9mb29iYXJiYXpxdXhxdXV4cXV1eA=="
SESSION_AQ = "AQoDYXdzEJr3AwsSession07abcdefghijklmnopqrstuvwxyz0123456789+/ABCDEFGH"
# (text, the secret that must go, what must stay)
SHAPES = [
    (f"credentials refreshed: {SESSION_IQ} expires soon", SESSION_IQ, "expires soon"),
    (f'{{"session": "{SESSION_FW}", "n": 1}}', SESSION_FW, '"n": 1'),
    (f"AWS_SESSION {SESSION_AQ}", SESSION_AQ, "AWS_SESSION "),
    ("upload failed: sig=r3Sas08%2Bdef%2Fghijkl%3D rejected", "r3Sas08%2Bdef%2Fghijkl%3D", "rejected"),
    ("SharedAccessSignature sv=2022-11-02 sig=r3SasAbcdefgh09Qz0w%3D", "r3SasAbcdefgh09Qz0w%3D", "sv=2022-11-02"),
    ("npm token npm_r3Npm10abcdefghijklmnopqrstuvwxyz0 set", "npm_r3Npm10abcdefghijklmnopqrstuvwxyz0", "npm token"),
    ("stripe sk_live_r3Stripe11abcdefghijklmnop ok", "sk_live_r3Stripe11abcdefghijklmnop", "ok"),
    ("restricted rk_live_r3Stripe12abcdefghijklmnop", "rk_live_r3Stripe12abcdefghijklmnop", "restricted"),
    ("test key sk_test_r3Stripe13abcdefghijklmnop", "sk_test_r3Stripe13abcdefghijklmnop", "test key"),
    ("docker dckr_pat_r3Docker14-abcdefghijklmno", "dckr_pat_r3Docker14-abcdefghijklmno", "docker"),
    ("http_proxy=r3user:r3ProxyPw15@proxy:3128", "r3ProxyPw15", "@proxy:3128"),
    ("HTTPS_PROXY='bob:r3Proxy@Pw16@proxy.corp:3128'", "r3Proxy@Pw16", "proxy.corp:3128'"),
    ("all_proxy: alice:r3ProxyPw17@10.0.0.1:1080", "r3ProxyPw17", "10.0.0.1:1080"),
    ("pip --proxy carol:r3ProxyPw18@proxy:3128 install x", "r3ProxyPw18", "install x"),
    ("registry login -u bob -p r3LoginPw19 registry.corp", "r3LoginPw19", "registry.corp"),
    ("then pull -p r3PullPw20 nvcr.io/nvidia/x:1", "r3PullPw20", "nvcr.io/nvidia/x:1"),
    ("login -p=r3LoginPw21 && run", "r3LoginPw21", "&& run"),
    ("login -pr3LoginPw22 reg", "r3LoginPw22", "reg"),
    ("ci: pull --password r3PullPw23 && echo done", "r3PullPw23", "echo done"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), SHAPES)
def test_leaking_shape_is_redacted(text: str, secret: str, kept: str) -> None:
    out = redact_text(text)
    assert secret not in out, out
    assert kept in out, out
    assert "<redacted:" in out
    assert redact_text(out) == out  # idempotent
    assert LineRedactor()(text) == out


def test_shapes_in_env_labels_argv_and_json() -> None:
    env = redact_env({"http_proxy": "r3user:r3ProxyPw24@proxy:3128", "CI_SESSION": SESSION_IQ, "NPM_CFG": "x"})
    assert "r3ProxyPw24" not in str(env) and SESSION_IQ not in str(env) and env["NPM_CFG"] == "x"
    assert env["http_proxy"].endswith("@proxy:3128")
    k8s = redact_obj([{"name": "HTTPS_PROXY", "value": "u:r3ProxyPw25@p:3128"}, {"name": "N", "value": "1"}])
    assert "r3ProxyPw25" not in str(k8s) and k8s[1]["value"] == "1"
    nested = redact_obj({"proxies": {"https_proxy": "u:r3ProxyPw26@p:3128"}})
    assert "r3ProxyPw26" not in str(nested)
    labels = {"Labels": {"ci.pull": "registry login -u bob -p r3LabelPw27 reg && pull -p r3LabelPw28 img"}}
    assert "r3LabelPw27" not in str(redact_obj(labels)) and "r3LabelPw28" not in str(redact_obj(labels))
    argv = redact_argv(["skopeo-wrapper", "login", "-u", "bob", "-p", "r3ArgvPw29", "reg"])
    assert "r3ArgvPw29" not in str(argv) and argv[-1] == "reg"


def test_aws_session_token_never_reaches_runbook_04s_check_json(tmp_path: Path) -> None:
    from vllm_runbooks.prefix_cache.check import PrefixCacheCheck

    rest = " You are the support assistant of the platform team. " + "Answer briefly. " * 40
    lines = []
    for i in range(4):
        system = f"Creds {SESSION_IQ} {SESSION_FW} at 2026-11-29T10:0{i}:00Z.{rest}"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": "q"}]
        lines.append({"model": "m", "messages": messages})
    jsonl = tmp_path / "requests.jsonl"
    jsonl.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    check = PrefixCacheCheck("http://127.0.0.1:9", request_timeout_s=2)
    try:
        mm = check.mismatch(str(jsonl))
        assert mm.ok and mm.example is not None
        shown = [mm._repr_html_(), json.dumps(check.scraps())]
        path = check.save(tmp_path / "run")
        assert path is not None
        shown.append(path.read_text(encoding="utf-8"))
    finally:
        check.close()
    assert "aws-session-token>" in shown[-1]  # the snippet next to the difference shows the marker
    for text in shown:
        for token in (SESSION_IQ, SESSION_FW):  # not even a piece of it (a snippet is a cut)
            pieces = [token[i : i + 12] for i in range(len(token) - 11)]
            assert not [p for p in pieces if p in text], text[:2000]


def test_runbook_04_does_not_store_its_startup_log(tmp_path: Path) -> None:
    from vllm_runbooks.prefix_cache.check import PrefixCacheCheck

    log = tmp_path / "startup.log"
    log.write_text("INFO start\n" + "x " * 40_000 + "r3CutTokenHead54" + "Q" * 9000 + "\nINFO up\n")
    check = PrefixCacheCheck("http://127.0.0.1:9", request_timeout_s=2, log_path=str(log))
    try:
        check.inputs()
        path = check.save(tmp_path / "run")
    finally:
        check.close()
    assert path is not None and "r3CutTokenHead54" not in path.read_text(encoding="utf-8")


# -- the words that must survive ----------------------------------------------------------------------
DIGEST = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"
KEPT = [
    "the login page loads; please pull the latest image and log in again",
    "git pull -p origin main",
    "ssh -p 2222 user@gpu-node",
    "docker run -p 8000:8000 vllm/vllm-openai:v0.11.0",
    "image vllm/vllm-openai:kimi-k3 model moonshotai/Kimi-K3 served as Kimi-K3",
    f"nvcr.io/nvidia/pytorch:25.01-py3 and vllm/vllm-openai@sha256:{DIGEST}",
    f"sha256:{DIGEST}",
    f'"sha256": "{DIGEST}"',
    f"image digest sha256={DIGEST} verified",
    "request 0e8a7f3c-9b2d-4c1e-8f6a-3d2b1c0a9e8f finished; GPU-5f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b ok",
    "proxy: 10.0.0.1:3128 and no_proxy=localhost,127.0.0.1",
    f"proxy: envoy:v1.29@sha256:{DIGEST}; the proxy nginx:1.25@sha256:{DIGEST}",
    f"--proxy-image envoy:v1.29@sha256:{DIGEST} and reverse proxy bob:alice@host in prose",
    "HTTPS_PROXY=http://proxy.corp.example:3128",
    "npm_config_cache=/tmp/npm npm_package_version=1.2.3",
    "risk_live_traffic=true desk_live_view=1",
    "received sig=15 (SIGTERM); signature=valid",
    "IQoJ is a prefix; FwoG too; AQoD",
    "PubKeyAuthentication yes; MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw alone is not a key block",
    "NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=0,1,2,3 --tensor-parallel-size 8 --max-model-len 262144",
]


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_words_hashes_uuids_models_and_tags_are_kept(text: str) -> None:
    assert redact_text(text) == text
    assert redact.redact_env_text(text) == text


def test_ordinary_env_file_is_kept_line_for_line() -> None:
    env = (R575 / "env.txt").read_text(encoding="utf-8")
    out = redact.redact_env_text(env)
    kept = [line for line in env.splitlines() if line.startswith(("NCCL_", "CUDA_"))]
    assert kept and all(line in out.splitlines() for line in kept)
    assert len(out.splitlines()) == len(env.splitlines())


# -- gates: the cheap tests still never skip a line a rule would change --------------------------------
def _reference(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(redact, "_redact_line", redact._redact_line_ungated)
        state = redact._PemState()
        return "\n".join(state(line) for line in text.split("\n"))


_WORDS = [
    "IQoJb3JpZ2lu",
    "FwoGZXIvYXdz",
    "AQoDYXdz",
    "abcdefghijklmnop0123",
    "sig",
    "Sig",
    "signature",
    "npm_",
    "sk_live_",
    "rk_test_",
    "dckr_pat_",
    "dckr_oat_",
    "proxy",
    "HTTP_PROXY",
    "all_proxy",
    "user",
    "pw",
    "login",
    "pull",
    "git",
    "-p",
    "--password",
    "r3",
    "%2B",
]
_GLUE = ["", "", "_", "-", "=", ": ", " ", "\t", "'", '"', ":", "@", "&", "/", "+", "=="]


def test_gates_hold_on_the_new_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(31)
    lines = [t for t, _, _ in SHAPES] + KEPT
    lines += ["".join(rng.choice(_WORDS) + rng.choice(_GLUE) for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    changed = 0
    for line in lines:
        for variant in (line, line.upper(), line.lower(), line.swapcase()):
            want = _reference(variant, monkeypatch)
            assert redact.redact_text(variant) == want, variant
            assert redact._PemState()(variant) == want, variant
            changed += want != variant
    assert changed > 300


@pytest.mark.parametrize(
    "unit",
    [
        "IQoJb3JpZ2lu",
        "IQoJb3JpZ2lu/",
        "sig=",
        " sig=aaaaaaaaaaaaaaaa%",
        "proxy:",
        "proxy=a:",
        "proxy=a:@",
        "http_proxy=a:b@",
        "login -p ",
        "pull ",
        "npm_",
    ],
)
def test_new_rules_stay_linear(unit: str) -> None:
    import time

    text = unit * (200_000 // len(unit))
    t0 = time.perf_counter()
    out = redact_text(text)
    assert time.perf_counter() - t0 < 3.0
    assert redact_text(out) == out


# -- low: a known API key is masked in every case and by its long prefixes ----------------------------
KEY = "r3KnownApiKey30-AbCdEfGhIjKlMnOp"


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        (f"echo {KEY} back", KEY),
        (f"lower {KEY.lower()} here", KEY.lower()),
        (f"upper {KEY.upper()} here", KEY.upper()),
        (f"cut {KEY[:12]}… at 12", KEY[:12]),
        (f"cut {KEY[:20]} at 20", KEY[:20]),
        (f"mixed {KEY[:16].swapcase()}", KEY[:16].swapcase()),
    ],
)
def test_known_key_is_masked_in_any_case_and_by_long_prefixes(text: str, gone: str) -> None:
    out = redact.mask_secret(text, KEY)
    assert gone not in out and "***" in out
    assert redact.mask_secret(out, KEY) == out


def test_known_key_mask_keeps_short_prefixes_and_other_words() -> None:
    text = f"{KEY[:11]} is too short to be the key; Bearer header was sent"
    assert redact.mask_secret(text, KEY) == text
    assert redact.mask_secret("short key abcd and ABCD", "abcd") == "short key *** and ***"
    assert redact.mask_secret("nothing", "") == "nothing"
