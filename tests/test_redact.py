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


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "VLLM_API_KEY",
        "OPENAI_API_KEY",
        "DB_PASSWORD",
        "SMTP_PASSWD",
        "AWS_ACCESS_KEY_ID",
        "AWS_REGION",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "MY_SECRET",
        "BASIC_AUTH",
        "--api-key",
        "api_key",
        "--hf-token",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "PWD",
        "NCCL_IB_HCA",
        "CUDA_VISIBLE_DEVICES",
        "NVIDIA_REQUIRE_CUDA",
        "--tokenizer",
        "--max-num-batched-tokens",
        "--kv-cache-dtype",
        "--tool-call-parser",
        "NV_CUDA_COMPAT_PACKAGE",
        "KEYBOARD",
    ],
)
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
    assert redact_argv(argv) == [
        "env",
        "HF_TOKEN=<redacted:secret>",
        "vllm",
        "serve",
        "--api-key",
        "<redacted:api-key>",
        "--hf-token=<redacted:hf-token>",
        "--port",
        "8000",
    ]


def test_env_values_and_url_credentials_inside_values() -> None:
    env = redact_env({"HF_TOKEN": HF, "HTTPS_PROXY": "http://bob:hunter2@proxy:3128", "NCCL_DEBUG": "INFO"})
    assert env == {
        "HF_TOKEN": "<redacted:secret>",
        "HTTPS_PROXY": "http://<redacted:url-credentials>@proxy:3128",
        "NCCL_DEBUG": "INFO",
    }


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
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N",
        ),
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
    text = (
        "NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=tesla,driver>=575,driver<576 api_key=None\n"
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12090).\n"
        "vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --tool-call-parser kimi_k3"
    )
    assert redact_text(text) == text


def test_line_redactor_spans_pem_blocks() -> None:
    r = LineRedactor()
    lines = [
        "before",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAA",
        "more",
        "-----END OPENSSH PRIVATE KEY-----",
        "after",
    ]
    out = [r(x) for x in lines]
    assert "b3BlbnNzaC1rZXktdjEAAAA" not in "".join(out) and "more" not in out
    assert out[0] == "before" and out[-1] == "after"


def test_obj_and_parameters() -> None:
    obj = {"Config": {"Env": [f"HF_TOKEN={HF}", "A=1"], "Cmd": ["--api-key", "zz9secret"]}, "token": "t0k3n"}
    out = redact_obj(obj)
    assert HF not in str(out) and "zz9secret" not in str(out) and "t0k3n" not in str(out)
    assert "A=1" in out["Config"]["Env"]
    params = redact_parameters(
        {
            "launch_command": "vllm serve m --api-key p4ramsecret",
            "endpoint": "http://u:pw123456@h:8000",
            "hf_token": "x",
            "probe_image": False,
        }
    )
    assert "p4ramsecret" not in str(params) and "pw123456" not in str(params)
    assert params["hf_token"] == "<redacted:secret>" and params["probe_image"] is False


def test_names_that_point_at_a_secret_are_kept() -> None:
    """api_key_env holds the NAME of a variable: the runbooks need it to read the key at run time."""
    from vllm_runbooks.redact import is_secret_name, redact_parameters

    assert not is_secret_name("api_key_env") and not is_secret_name("HF_TOKEN_PATH")
    assert is_secret_name("HF_TOKEN") and is_secret_name("api_key")
    params = redact_parameters({"api_key_env": "VLLM_API_KEY", "api_key": "abc123"})
    assert params == {"api_key_env": "VLLM_API_KEY", "api_key": "<redacted:secret>"}


# --- long lines: linear patterns and a line cap (a 5 MB line once hung evidence capture) ----------
def _timed(fn, arg):  # noqa: ANN001, ANN202
    import time

    t0 = time.perf_counter()
    out = fn(arg)
    return out, time.perf_counter() - t0


@pytest.mark.parametrize(
    "line", ["A" * 1_000_000, "ERROR " + "A" * 5_000_000, "x=1 " * 1_250_000, "'k': 'v', " * 500_000]
)
def test_huge_line_is_cut_fast_and_nothing_past_the_cap_is_written(line: str) -> None:
    from vllm_runbooks.redact import LINE_CAP_CHARS

    planted = line + " HF_TOKEN=tail-secret-0123 --api-key tailkey99"
    out, took = _timed(LineRedactor(), planted)
    assert took < 2.0, f"{took:.2f}s: quadratic?"
    assert "tail-secret-0123" not in out and "tailkey99" not in out  # dropped, not passed through
    assert len(out) < 2 * LINE_CAP_CHARS and out.endswith("characters; the rest was not kept]")
    assert f"of {len(planted)} characters" in out
    assert LineRedactor()(out) == out  # idempotent, the note included


def test_secret_just_before_the_cap_is_redacted_not_split() -> None:
    r = LineRedactor(cap=1000)
    line = "a" * 970 + f" {HF} " + "b" * 5000
    out = r(line)
    assert HF not in out and HF[:10] not in out and "the rest was not kept" in out


@pytest.mark.parametrize(
    "unit",
    [
        "A",
        "a.",
        "eyJ-",
        "sk-",
        "xoxb-",
        "a://",
        "a=",
        "a:",
        "a='",
        "a=[",
        "'a': ",
        "--a ",
        "--api-key ",
        "'--api-key', '",
        ";a",
        "authorization: ",
        "x://u:",
        "api_key: ",
        "key='",
        "hf_",
        "-----BEGIN ",
    ],
)
def test_every_pattern_is_linear_without_the_cap(unit: str) -> None:
    """redact_text has no cap: 200k characters of a pathological shape must take well under a second
    (a quadratic pattern took 20 s on 40k)."""
    text = unit * (200_000 // len(unit))
    out, took = _timed(redact_text, text)
    assert took < 2.0, f"{unit!r}: {took:.2f}s"
    assert redact_text(out) == out


# --- forms that used to be missed ------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,secrets",
    [
        # names without a listed part
        ("PGPASSWORD=pgS3cret psql -h db", ["pgS3cret"]),
        ("export MYSQL_PWD=myS3cret", ["myS3cret"]),
        ("RABBITMQ_DEFAULT_PASS=rabbitS3cret", ["rabbitS3cret"]),
        ("clientSecret=camelS3cret accessToken=camelT0ken", ["camelS3cret", "camelT0ken"]),
        # several values of --api-key, in vLLM's own log lines and in text
        (
            "non-default args: {'model': 'm', 'api_key': ['k1secret', 'k2secret'], 'tensor_parallel_size': 8}",
            ["k1secret", "k2secret"],
        ),
        ("Namespace(api_key=['k1secret','k2secret'], port=8000)", ["k1secret", "k2secret"]),
        ('{"api_key": ["k1secret", "k2secret"]}', ["k1secret", "k2secret"]),
        ("vllm serve m --api-key k1secret k2secret --port 8000", ["k1secret", "k2secret"]),
        ("vllm serve m --api-key sk-proj-abcdefghijklmnop1234 k2secret", ["abcdefghijklmnop", "k2secret"]),
        # a secret pair inside the quoted value of a harmless key
        ("snippet_a='system: HF_TOKEN=innerS3cret then' snippet_b=\"x\"", ["innerS3cret"]),
        ('{"description": "uses api_key: innerK3y here"}', ["innerK3y"]),
        # unquoted key: value
        ("curl -H 'X-API-Key: headerS3cret' http://h/v1/models", ["headerS3cret"]),
        ("X-API-Key: headerS3cret", ["headerS3cret"]),
        ("api_key: yamlS3cret", ["yamlS3cret"]),
        ('  hf_token: "yamlQuot3d"', ["yamlQuot3d"]),
        # URL credentials: empty user, @ in the password
        ("redis://:redisPw99@cache:6379/0", ["redisPw99"]),
        ("https://alice:p@ssw0rd@hf.example/x", ["p@ssw0rd", "ssw0rd"]),
        ("postgres://u:a@b:c@db:5432/x", ["a@b:c"]),
        # a launch command written as a list
        (
            "cmd: ['vllm', 'serve', 'm', '--api-key', 'k1secret', 'k2secret', '--port', '8000']",
            ["k1secret", "k2secret"],
        ),
        ('["vllm", "serve", "--api-key", "k1secret", "--port", "8000"]', ["k1secret"]),
        ("['vllm', '--api-key=k1secret']", ["k1secret"]),
    ],
)
def test_missed_forms_are_redacted(text: str, secrets: list[str]) -> None:
    out = redact_text(text)
    for s in secrets:
        assert s not in out, out
    assert "<redacted:" in out
    assert redact_text(out) == out


def test_neighbours_of_new_forms_survive() -> None:
    assert redact_text("vllm serve m --api-key k1 k2 --port 8000") == (
        "vllm serve m --api-key <redacted:api-key> <redacted:api-key> --port 8000"
    )
    assert redact_text("non-default args: {'api_key': ['k1', 'k2'], 'tensor_parallel_size': 8}") == (
        "non-default args: {'api_key': ['<redacted:secret>'], 'tensor_parallel_size': 8}"
    )
    assert redact_text("['--api-key', 'k1', '--port', '8000']") == (
        "['--api-key', '<redacted:api-key>', '--port', '8000']"
    )
    assert redact_text("redis://:pw@cache:6379/0") == "redis://<redacted:url-credentials>@cache:6379/0"
    assert redact_text("Authorization: Bearer abcdef123456ghijkl") == "Authorization: Bearer <redacted:authorization>"
    assert redact_text("https://host:8080/path?q=1") == "https://host:8080/path?q=1"
    assert redact_text("KeyError: 'model.layers.0.mlp'") == "KeyError: 'model.layers.0.mlp'"


def test_argv_hides_every_value_of_a_secret_flag() -> None:
    assert redact_argv(["vllm", "serve", "m", "--api-key", "k1", "k2", "--port", "8000"]) == [
        "vllm",
        "serve",
        "m",
        "--api-key",
        "<redacted:api-key>",
        "<redacted:api-key>",
        "--port",
        "8000",
    ]
    assert redact_argv(["env", "PGPASSWORD=x", "MYSQL_PWD=y", "psql"]) == [
        "env",
        "PGPASSWORD=<redacted:secret>",
        "MYSQL_PWD=<redacted:secret>",
        "psql",
    ]


@pytest.mark.parametrize(
    "name",
    [
        "PGPASSWORD",
        "MYSQL_PWD",
        "SSHPASS",
        "DB_PASS",
        "CLIENTSECRET",
        "GH_TOKEN",
        "NPMTOKEN",
        "apiKey",
        "accessToken",
        "session_token",
        "SESSION_KEY",
        "x-api-key",
    ],
)
def test_more_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "prompt_tokens",
        "token_count",
        "time_to_first_token_seconds",
        "prompt_token_ids",
        "maxTokens",
        "signature",
        "pass",
        "session_id",
        "key_type",
        "KeyError",
        "PWD",
        "--tokenizer-mode",
        "AWS_CONFIG_FILE",
        "num_tokens",
    ],
)
def test_ordinary_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


# --- over-redaction: ordinary records survive ------------------------------------------------------
def test_log_finding_and_metrics_survive_unchanged() -> None:
    finding = {
        "signature": "cuda_driver_too_old",
        "label": "driver_too_old",
        "stage": "startup",
        "severity": "fatal",
        "priority": 10,
        "line": 42,
        "text": "RuntimeError: The NVIDIA driver on your system is too old (found version 12090).",
        "match": "driver on your system is too old",
        "advice": "Upgrade the driver to r580 or newer.",
        "source": "https://github.com/vllm-project/vllm/issues/1",
    }
    metrics = {
        "pass": 2,
        "key": 7,
        "session_id": 123,
        "token_count": 4096,
        "prompt_tokens": 512,
        "prompt_token_ids": [1, 2, 3],
        "time_to_first_token_seconds": 0.25,
        "max_tokens": 64,
        "api_key": True,
        "secret_count": 0,
        "private": False,
        "auth": None,
    }
    for obj in (finding, metrics, {"findings": [finding, finding]}):
        assert redact_obj(obj) == obj
    assert redact_text(str(finding)) == str(finding)


def test_numbers_are_kept_strings_of_secret_keys_are_not() -> None:
    out = redact_obj(
        {
            "api_key": "abc",
            "token": 5,
            "password": ["p1", "p2"],
            "env": [{"name": "PGPASSWORD", "value": "pgv"}, {"name": "PORT", "value": "8000"}],
        }
    )
    assert out == {
        "api_key": "<redacted:secret>",
        "token": 5,
        "password": ["<redacted:secret>"] * 2,
        "env": [{"name": "PGPASSWORD", "value": "<redacted:secret>"}, {"name": "PORT", "value": "8000"}],
    }
    assert redact_obj(out) == out
