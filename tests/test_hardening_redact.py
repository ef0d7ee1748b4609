"""Issue 8: secret shapes that reached stored logs, launch commands, labels and notebooks."""

from __future__ import annotations

import pytest

from vllm_runbooks.redact import LineRedactor, redact_argv, redact_obj, redact_text

# (text, the secret that must go, what must stay)
SHAPES = [
    ("docker login nvcr.io -u '$oauthtoken' -p nvapiLoginPw01xyz", "nvapiLoginPw01xyz", "-u '$oauthtoken'"),
    ("docker login registry -u bob -p PASSWORDdl02", "PASSWORDdl02", "-u bob"),
    ("docker login -pAttachedDl03 reg", "AttachedDl03", "docker login"),
    ("podman login -p=EqDl04 quay.io", "EqDl04", "quay.io"),
    ("key nvapi-AbCdEfGhIjKlMnOpQrStUvWx05", "nvapi-AbCdEfGhIjKlMnOpQrStUvWx05", "key"),
    ('msg={\\"api_key\\": \\"jsonEscaped06\\", \\"n\\": 1}', "jsonEscaped06", '\\"n\\": 1'),
    ("endpoint http://tokenUserOnly07@gpu-node:8000/v1", "tokenUserOnly07", "gpu-node:8000"),
    ("curl -u bob:curlPassword08 https://x", "curlPassword08", "bob:"),
    ("curl --user=alice:curlPassword09 https://x", "curlPassword09", "alice:"),
    ("mysql -h db -u root -pMysqlPw10 shop", "MysqlPw10", "shop"),
    ("sshpass -p SshpassPw11 ssh node", "SshpassPw11", "ssh node"),
    ("redis-cli -h cache -a RedisPw12 ping", "RedisPw12", "ping"),
    ("token glpat-AbCdEfGhIjKlMnOpQr13", "glpat-AbCdEfGhIjKlMnOpQr13", "token"),
    ("HF_TOKEN\tTabSeparated14", "TabSeparated14", "HF_TOKEN\t"),
    ("PASSWORD\tTabSeparated15\nNCCL_DEBUG\tINFO", "TabSeparated15", "NCCL_DEBUG\tINFO"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), SHAPES)
def test_secret_shape_is_redacted(text: str, secret: str, kept: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert kept in out
    assert "<redacted:" in out
    assert redact_text(out) == out  # idempotent


def test_port_flags_of_docker_run_are_not_secrets() -> None:
    text = "docker run -p 8000:8000 -e X=1 vllm/vllm-openai; mysql -p shop"
    assert redact_text(text) == text


def test_tool_secrets_in_argument_lists_and_labels() -> None:
    assert "ArgvPw1" not in str(redact_argv(["sshpass", "-p", "ArgvPw1", "ssh", "h"]))
    assert "ArgvPw2" not in str(redact_argv(["/usr/bin/docker", "login", "-u", "b", "-p", "ArgvPw2"]))
    assert "ArgvPw3" not in str(redact_obj({"Cmd": ["mysql", "-pArgvPw3"]}))
    labels = {"Labels": {"deploy": "docker login -u bob -p LabelPw4 registry.corp"}}
    assert "LabelPw4" not in str(redact_obj(labels))


def test_pgp_private_key_block() -> None:
    text = (
        "before\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGSecretPgp5\n=aBcD\n"
        "-----END PGP PRIVATE KEY BLOCK-----\nafter"
    )
    out = redact_text(text)
    assert "SecretPgp5" not in out and "before" in out and "after" in out
    streamed = LineRedactor()
    lines = [streamed(line) for line in text.split("\n")]
    assert "SecretPgp5" not in "\n".join(lines) and lines[-1] == "after"


def test_begin_private_key_without_end_blanks_only_key_material() -> None:
    lines = [
        "2026-11-29T20:40:01Z -----BEGIN PRIVATE KEY-----",
        "2026-11-29T20:40:01Z MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcSecretPem6",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12080).",
        "more lines",
    ]
    red = LineRedactor()
    out = [red(line) for line in lines]
    assert "SecretPem6" not in "\n".join(out)
    assert out[2] == lines[2] and out[3] == lines[3]
    text_out = redact_text("\n".join(lines))
    assert "SecretPem6" not in text_out and lines[2] in text_out
    # a mention on one line blanks nothing else
    mention = redact_text("saw -----BEGIN PRIVATE KEY----- in a file\nERROR x")
    assert mention == "saw <redacted:private-key> in a file\nERROR x"


def test_escaped_pem_inside_json_without_end() -> None:
    out = redact_text('{"k": "-----BEGIN PRIVATE KEY-----\\nMIIEsecretMaterial7\\nabc", "n": 1}')
    assert "secretMaterial7" not in out and '"n": 1' in out


def test_token_cut_at_the_line_cap_keeps_no_readable_head() -> None:
    red = LineRedactor(cap=1000)
    line = "x " * 100 + "opaqueTokenHead8" + "Z" * 5000
    out = red(line)
    assert "opaqueTokenHead8" not in out and "ZZZ" not in out
    assert "line cut at" in out and out.startswith("x x")
    whole = red("w" * 3000)
    assert "www" not in whole and "line cut at 0" in whole


@pytest.mark.parametrize(
    "unit",
    [
        "docker ",
        "docker login -p ",
        "curl -u ",
        "mysql -p",
        "-----BEGIN PRIVATE KEY-----",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\\n",
        '\\"api_key\\": ',
        '\\\\\\"k',
        "KEY\t",
        "KEY\\t",
        "http://a@",
        "nvapi-",
        "glpat-",
        "&#x27;api_key&#x27;: ",
    ],
)
def test_new_shapes_stay_linear(unit: str) -> None:
    """Like test_redact's linearity check, for the shapes added here (a benchmark-sized margin)."""
    import time

    from vllm_runbooks.redact import redact_markup

    text = unit * (200_000 // len(unit))
    t0 = time.perf_counter()
    out = redact_markup(text)
    assert time.perf_counter() - t0 < 3.0
    assert redact_markup(out) == out
