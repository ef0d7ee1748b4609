"""Redaction: every secret shape from the issue is removed; ordinary facts survive."""

from __future__ import annotations

import pytest

from vllm_runbooks.redact import (
    LineRedactor,
    is_secret_name,
    redact_argv,
    redact_env,
    redact_obj,
    redact_parameters,
    redact_text,
)

HF = "hf_kQ7pLm2XvR9tYw4ZsB8nC3dF6gH1jK5aE0uI"


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "OPENAI_API_KEY",
                                  "DB_PASSWORD", "SMTP_PASSWD", "AWS_ACCESS_KEY_ID", "AWS_REGION",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "MY_SECRET", "BASIC_AUTH", "--api-key",
                                  "api_key", "--hf-token"])
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "PWD", "NCCL_IB_HCA", "CUDA_VISIBLE_DEVICES", "NVIDIA_REQUIRE_CUDA",
                                  "--tokenizer", "--max-num-batched-tokens", "--kv-cache-dtype",
                                  "--tool-call-parser", "NV_CUDA_COMPAT_PACKAGE", "KEYBOARD"])
def test_not_secret_names(name: str) -> None:
    assert not is_secret_name(name)


def test_flags_both_forms_and_neighbours_kept() -> None:
    cmd = "vllm serve m --api-key abc123secret --tokenizer t --api-key=def456secret --max-num-batched-tokens 8192"
    out = redact_text(cmd)
    assert "abc123secret" not in out and "def456secret" not in out
    assert "--api-key <redacted:api-key>" in out and "--api-key=<redacted:api-key>" in out
    assert "--tokenizer t" in out and "--max-num-batched-tokens 8192" in out


def test_argv_forms() -> None:
    argv = ["env", "HF_TOKEN=xyz", "vllm", "serve", "--api-key", "k1", "--hf-token=k2", "--port", "8000"]
    assert redact_argv(argv) == ["env", "HF_TOKEN=<redacted:secret>", "vllm", "serve", "--api-key",
                                 "<redacted:api-key>", "--hf-token=<redacted:hf-token>", "--port", "8000"]


def test_env_values_and_url_credentials_inside_values() -> None:
    env = redact_env({"HF_TOKEN": HF, "HTTPS_PROXY": "http://bob:hunter2@proxy:3128", "NCCL_DEBUG": "INFO"})
    assert env == {"HF_TOKEN": "<redacted:secret>", "HTTPS_PROXY": "http://<redacted:url-credentials>@proxy:3128",
                   "NCCL_DEBUG": "INFO"}


@pytest.mark.parametrize(
    "text,secret",
    [
        ("GET https://alice:s3cr3tpw@hf.example/x", "s3cr3tpw"),
        ("https://hf.example/x?token=qwertyuiop&a=1", "qwertyuiop"),
        ("curl -H 'Authorization: Bearer abcdef123456ghijkl'", "abcdef123456ghijkl"),
        ("authorization=Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("key id AKIAJK3CANARY7EXAMPL in log", "AKIAJK3CANARY7EXAMPL"),
        (f"using token {HF}", HF),
        ("openai key sk-proj-abcdefghijklmnop1234 set", "sk-proj-abcdefghijklmnop1234"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789AB leaked", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
         "dozjgNryP4J3jVmNHl0w5N"),
        ("non-default args: {'api_key': ['mysecretkey123'], 'tensor_parallel_size': 8}", "mysecretkey123"),
        ("Namespace(api_key='nsSecret42', port=8000)", "nsSecret42"),
        ("export OPENAI_API_KEY=plainvalue99", "plainvalue99"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA7"),
    ],
)
def test_text_secrets_removed(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert "<redacted:" in out
    assert redact_text(out) == out  # idempotent


def test_ordinary_facts_untouched() -> None:
    text = ("NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=tesla,driver>=575,driver<576 api_key=None\n"
            "RuntimeError: The NVIDIA driver on your system is too old (found version 12090).\n"
            "vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --tool-call-parser kimi_k3")
    assert redact_text(text) == text


def test_line_redactor_spans_pem_blocks() -> None:
    r = LineRedactor()
    lines = ["before", "-----BEGIN OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAA", "more",
             "-----END OPENSSH PRIVATE KEY-----", "after"]
    out = [r(x) for x in lines]
    assert "b3BlbnNzaC1rZXktdjEAAAA" not in "".join(out) and "more" not in out
    assert out[0] == "before" and out[-1] == "after"


def test_obj_and_parameters() -> None:
    obj = {"Config": {"Env": [f"HF_TOKEN={HF}", "A=1"], "Cmd": ["--api-key", "zz9secret"]}, "token": "t0k3n"}
    out = redact_obj(obj)
    assert HF not in str(out) and "zz9secret" not in str(out) and "t0k3n" not in str(out)
    assert "A=1" in out["Config"]["Env"]
    params = redact_parameters({"launch_command": "vllm serve m --api-key p4ramsecret",
                                "endpoint": "http://u:pw123456@h:8000", "hf_token": "x", "probe_image": False})
    assert "p4ramsecret" not in str(params) and "pw123456" not in str(params)
    assert params["hf_token"] == "<redacted:secret>" and params["probe_image"] is False


def test_names_that_point_at_a_secret_are_kept() -> None:
    """api_key_env holds the NAME of a variable: the runbooks need it to read the key at run time."""
    from vllm_runbooks.redact import is_secret_name, redact_parameters

    assert not is_secret_name("api_key_env") and not is_secret_name("HF_TOKEN_PATH")
    assert is_secret_name("HF_TOKEN") and is_secret_name("api_key")
    params = redact_parameters({"api_key_env": "VLLM_API_KEY", "api_key": "abc123"})
    assert params == {"api_key_env": "VLLM_API_KEY", "api_key": "<redacted:secret>"}
