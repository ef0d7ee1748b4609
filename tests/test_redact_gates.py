"""The cheap tests that let a line skip redaction rules must never skip a line a rule would change.

The reference is every rule on every line (``_redact_line_ungated``); the gated path must give
the same text on every secret shape of the redaction tests, the labelled log corpus, and many
generated lines mixing the words the gates look for with the characters around them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from vllm_runbooks import redact

ROOT = Path(__file__).resolve().parents[1]


def _reference(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(redact, "_redact_line", redact._redact_line_ungated)
        state = redact._PemState()
        return "\n".join(state(line) for line in text.split("\n"))


def _shape_texts() -> list[str]:
    """Every string argument of the parametrized redaction tests (their secret shapes and neighbours)."""
    import importlib.util

    out: list[str] = []
    for name in ("test_redact.py", "test_hardening_redact.py"):
        spec = importlib.util.spec_from_file_location(f"_gates_{name[:-3]}", ROOT / "tests" / name)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for fn in vars(mod).values():
            for mark in getattr(fn, "pytestmark", []):
                if mark.name == "parametrize":
                    for case in mark.args[1]:
                        values = case.values if hasattr(case, "values") else case
                        for v in values if isinstance(values, tuple | list) else (values,):
                            if isinstance(v, str) and len(v) < 4096:
                                out.append(v)
    return out


_WORDS = [
    *(w.lower() for w, _, _ in redact._NAME_GATES),
    *(w for w, _, _ in redact._NAME_GATES),
    "Token",
    "Key",
    "Pass",
    "Pat",
    "Secret",
    "Auth",
    "tokens",
    "token_ids",
    "ENV",
    "FILE",
    "COUNT",
    "Ids",
    "api",
    "hf",
    "db",
    "x",
    "2",
    "mysql",
    "pwd",
    "aws",
    "AWS",
    "session",
    "azure",
    "bw",
    *redact._ANY_WORDS,
    *redact._ANY_UPPER,
    "authorization",
    "bearer",
    "sig",
    "code",
    "AKIAIOSFODNN7EXAMPLE",
    "hf_abcdefghijklmnopqrstuvwxyz",
    "sk-abcdefghijklmnop1234",
    "ghp_" + "a" * 36,
    "xoxb-1234567890abc",
    "AIza" + "b" * 35,
    "eyJabcdefghij.eyJabcdefghij.abcdefghij",
    "nvapi-" + "c" * 20,
    "glpat-" + "d" * 20,
    "docker login",
    "curl -u",
    "mysql -pPw1",
    "sshpass -p",
    "redis-cli -a",
    "https://u:p@h",
    "http://tok@h",
    "?token=",
    "&sig=",
    "value",
    "'v'",
    '"v"',
    "[1, 2]",
    "None",
    "ſ",
    "ß",
    "K",
]
_GLUE = ["", "", "_", "-", ".", "=", ": ", " ", "\t", "\\t", "'", '"', "--", "-", "://", "@", "?", "&", ", ", '\\"']


def _generated(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_WORDS) + rng.choice(_GLUE) for _ in range(rng.randint(1, 8))) for _ in range(n)]


def test_gated_lines_equal_every_rule_on_shapes_and_generated_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _shape_texts() + _generated(6000, seed=14)
    assert len(lines) > 6000
    changed = 0
    for line in lines:
        for variant in (line, line.upper(), line.lower(), line.swapcase()):
            want = _reference(variant, monkeypatch)
            assert redact.redact_text(variant) == want, variant
            if "\n" not in variant:  # one line: the gated path itself (not a remembered answer), LineRedactor
                assert redact._PemState()(variant) == want, variant
                assert redact.LineRedactor(cap=1 << 20)(variant) == want, variant
                assert redact._PemState()(want) == want, want  # idempotent: an output is remembered as redacted
            changed += want != variant
    assert changed > 1000  # the generated lines do hold secrets: the comparison is not on plain text only


def test_gated_text_equals_every_rule_on_corpus_and_mixed_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = []
    for p in (Path("/work/shared/corpus/logs_dev.jsonl"), ROOT / "tests/data/logs_heldout.jsonl"):
        if p.is_file():
            texts += [str(json.loads(row).get("log") or "") for row in p.read_text().splitlines()]
    texts.append((ROOT / "tests/data/prefix_cache/startup-default-0.32.0-cpu.log").read_text())
    rng = random.Random(8)
    gen = _generated(3000, seed=15)
    texts += ["\n".join(rng.sample(gen, 40)) for _ in range(50)]  # many lines per text: the block path
    texts.append("plain\nPGPASSWORD=x ß\nnon-ASCII █ api_key=k1\nhfTOKEN=y\n")
    for text in texts:
        assert redact.redact_text(text) == _reference(text, monkeypatch)


def test_many_lines_at_once_equal_one_call_per_line() -> None:
    """``LineRedactor.many`` (store_log's batches) gives what one call per line gives, key blocks too."""
    rng = random.Random(21)
    gen = _generated(2000, seed=16)
    pem = ["-----BEGIN RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA7", "-----END RSA PRIVATE KEY-----"]
    lines: list[tuple[str, int | None]] = []
    for k in range(3000):
        if k % 700 == 350:
            lines += [(p, None) for p in pem]
        line = rng.choice(gen)
        lines.append((line * 40, None) if k % 500 == 7 else (line, 99_999 if k % 450 == 3 else None))
    one = redact.LineRedactor(cap=2000)
    want = [one(line, total) for line, total in lines]
    batched = redact.LineRedactor(cap=2000)
    got: list[str] = []
    for at in range(0, len(lines), 97):
        got += batched.many(lines[at : at + 97])
    assert got == want
    assert sum(w != line for w, (line, _) in zip(want, lines, strict=True)) > 300
