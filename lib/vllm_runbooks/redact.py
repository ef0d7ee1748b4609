"""The one place secrets are removed, before anything is written.

Standard library only, on purpose: ``probe.py`` embeds this file's source when it is copied
onto a node where nothing can be installed, so both paths redact with the same rules.

Rules (each replaces the secret with a ``<redacted:kind>`` marker and keeps the name, so a
reviewer still sees *that* a token was set):

- environment names that look secret (parts TOKEN, KEY, SECRET, PASSWORD, PASSWD, PASS,
  CREDENTIAL(S), AUTH, COOKIE, SESSION…, and everything ``AWS_*``);
- command-line flags whose name has such a part: ``--api-key X`` and ``--api-key=X``;
- ``NAME=value`` pairs and ``'name': 'value'`` / ``name='value'`` in text;
- credentials in URLs (``https://user:pass@host``) and secret query parameters (``?token=``);
- ``Authorization: Bearer …`` / ``Basic …`` headers;
- well-known token shapes anywhere: AWS access key ids, ``hf_…``, ``sk-…``, GitHub
  ``ghp_…``/``github_pat_…``, Slack ``xox?-…``, Google ``AIza…``, JWTs, PEM private-key blocks.

Redaction is idempotent: running it twice gives the same text.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "MARK",
    "is_secret_name",
    "redact_text",
    "redact_env",
    "redact_argv",
    "redact_obj",
    "redact_parameters",
    "LineRedactor",
]

MARK = "<redacted:{}>"

_SECRET_PARTS = frozenset(
    {
        "TOKEN",
        "KEY",
        "KEYS",
        "APIKEY",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "SESSION",
        "SIGNATURE",
        "PRIVATE",
        "ACCESSKEY",
        "SECRETKEY",
        "PAT",
        "HFTOKEN",
    }
)
# A last part that makes the name a reference to a secret (a variable name, a file), not one.
_REFERENCE_SUFFIXES = frozenset({"ENV", "VAR", "VARIABLE", "NAME", "FILE", "PATH", "DIR"})
# Names that contain a secret-looking part but are well-known non-secrets.
_NOT_SECRET = frozenset(
    {
        "NCCL_IB_PKEY",
        "KEYBOARD",
        "XDG_SESSION_TYPE",
        "XDG_SESSION_ID",
        "XDG_SESSION_CLASS",
        "XDG_SESSION_DESKTOP",
        "DBUS_SESSION_BUS_ADDRESS",
    }
)


def is_secret_name(name: str) -> bool:
    """True when an env var, flag or JSON key name looks like it holds a secret."""
    upper = name.strip().strip("-'\"").upper().replace("-", "_").replace(".", "_")
    if not upper or upper in _NOT_SECRET:
        return False
    if upper.startswith("AWS_"):
        return True
    parts = [p for p in upper.split("_") if p]
    if len(parts) > 1 and parts[-1] in _REFERENCE_SUFFIXES:
        return False  # API_KEY_ENV, HF_TOKEN_PATH: the name of where a secret lives, not the secret
    return any(p in _SECRET_PARTS for p in parts) or upper.endswith(("APIKEY", "_TOKEN"))


def _mark(kind: str) -> str:
    return MARK.format(kind)


_MARKER_RE = re.compile(r"<redacted:[\w.-]+>")

# --- value-shaped secrets, found anywhere -------------------------------------------------
_TOKEN_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"), "aws-key"),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"), "hf-token"),
    (re.compile(r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"), "api-key"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), "github-token"),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"), "github-token"),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), "slack-token"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), "google-api-key"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "jwt"),
]

_PEM_ONE = re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.S)
_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END ([A-Z0-9 ]*)PRIVATE KEY-----")

# --- structural secrets ---------------------------------------------------------------------
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*['\"]?)(bearer|basic|token|digest)?\s*([^\s'\",]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})")
_URL_CRED = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s:@'\"<>]+):([^/\s@'\"<>]+)@")
_URL_QUERY = re.compile(r"([?&;])([A-Za-z0-9_.-]+)=([^&#\s'\"<>]+)")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9_-]*)(=|[ \t]+)(\"[^\"]*\"|'[^']*'|[^\s'\"]+)")
_ASSIGN = re.compile(r"(?<![\w.-])([A-Za-z_][A-Za-z0-9_.-]*)=(\"[^\"]*\"|'[^']*'|[^\s,;'\"&]+)")
_QUOTED_KV = re.compile(r"(['\"]?)([A-Za-z_][A-Za-z0-9_.-]*)\1(\s*[:=]\s*)(\[\s*)?(['\"])(.*?)(?<!\\)\5")


def _flag_repl(m: re.Match[str]) -> str:
    flag, sep, value = m.group(1), m.group(2), m.group(3)
    if not is_secret_name(flag) or value.startswith("-") or value.startswith("<redacted:"):
        return m.group(0)
    return f"{flag}{sep}{_mark(flag.lstrip('-').lower())}"


def _assign_repl(m: re.Match[str]) -> str:
    name, value = m.group(1), m.group(2)
    if not is_secret_name(name) or value.strip("'\"").startswith("<redacted:"):
        return m.group(0)
    if value.strip("'\"") in {"", "None", "null", "none"}:
        return m.group(0)
    return f"{name}={_mark('secret')}"


def _quoted_kv_repl(m: re.Match[str]) -> str:
    q, name, sep, bracket, vq, value = m.groups()
    if not is_secret_name(name) or not value or _MARKER_RE.fullmatch(value):
        return m.group(0)
    return f"{q}{name}{q}{sep}{bracket or ''}{vq}{_mark('secret')}{vq}"


def _query_repl(m: re.Match[str]) -> str:
    lead, name, value = m.groups()
    if not is_secret_name(name) and name.lower() not in {"sig", "code", "x-amz-signature"}:
        return m.group(0)
    if _MARKER_RE.fullmatch(value):
        return m.group(0)
    return f"{lead}{name}={_mark('url-token')}"


def _auth_repl(m: re.Match[str]) -> str:
    head, scheme, value = m.groups()
    if _MARKER_RE.fullmatch(value):
        return m.group(0)
    return f"{head}{(scheme + ' ') if scheme else ''}{_mark('authorization')}"


def _redact_line(text: str) -> str:
    """All single-line rules; shared by ``redact_text`` and the streaming ``LineRedactor``."""
    if not text:
        return text
    out = _URL_CRED.sub(lambda m: f"{m.group(1)}{_mark('url-credentials')}@", text)
    out = _AUTH_HEADER.sub(_auth_repl, out)
    out = _BEARER.sub(lambda m: m.group(1) + _mark("bearer"), out)
    out = _URL_QUERY.sub(_query_repl, out)
    for pattern, kind in _TOKEN_PATTERNS:
        out = pattern.sub(_mark(kind), out)
    out = _FLAG.sub(_flag_repl, out)
    out = _QUOTED_KV.sub(_quoted_kv_repl, out)
    out = _ASSIGN.sub(_assign_repl, out)
    return out


def redact_text(text: str) -> str:
    """Redact free text: logs, command lines, config files, env dumps, JSON text."""
    if not isinstance(text, str) or not text:
        return text
    out = _PEM_ONE.sub(_mark("private-key"), text)
    if "\n" not in out:
        return _redact_line(out)
    return "\n".join(_redact_line(line) for line in out.split("\n"))


class LineRedactor:
    """Streaming redaction for huge logs: remembers when it is inside a PEM private-key block."""

    def __init__(self) -> None:
        self._in_pem = False

    def __call__(self, line: str) -> str:
        if self._in_pem:
            if _PEM_END.search(line):
                self._in_pem = False
                return _redact_line(_PEM_END.split(line, maxsplit=1)[-1])
            return ""
        if _PEM_BEGIN.search(line) and not _PEM_END.search(line):
            self._in_pem = True
            return _redact_line(line[: _PEM_BEGIN.search(line).start()]) + _mark("private-key")  # type: ignore[union-attr]
        return redact_text(line)


def redact_env(env: dict[str, Any]) -> dict[str, Any]:
    """Secret-named variables lose their value; every other value is redacted as text."""
    out: dict[str, Any] = {}
    for name, value in (env or {}).items():
        if is_secret_name(str(name)) and value not in (None, ""):
            out[name] = _mark("secret")
        elif isinstance(value, str):
            out[name] = redact_text(value)
        else:
            out[name] = value
    return out


def redact_argv(argv: list[str]) -> list[str]:
    """Redact an argument vector: ``--api-key X``, ``--api-key=X``, ``NAME=value`` and text."""
    out: list[str] = []
    hide_next = ""
    for arg in argv or []:
        arg = str(arg)
        if hide_next:
            out.append(_mark(hide_next) if not arg.startswith("-") else redact_text(arg))
            hide_next = ""
            continue
        if arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
            if is_secret_name(flag) and value:
                out.append(f"{flag}={_mark(flag.lstrip('-').lower())}")
                continue
        elif arg.startswith("-") and is_secret_name(arg):
            out.append(arg)
            hide_next = arg.lstrip("-").lower()
            continue
        elif "=" in arg and not arg.startswith("-"):
            name, _, value = arg.partition("=")
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and is_secret_name(name) and value:
                out.append(f"{name}={_mark('secret')}")
                continue
        out.append(redact_text(arg))
    return out


def redact_obj(obj: Any, _key: str | None = None) -> Any:
    """Recursively redact JSON-like data: secret-named keys, ``Env``-style lists, all strings."""
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            if (
                isinstance(k, str)
                and is_secret_name(k)
                and isinstance(v, str | int | float)
                and v not in ("", None)
                and not isinstance(v, bool)
            ):
                out[k] = _mark("secret")
            else:
                out[k] = redact_obj(v, str(k))
        return out
    if isinstance(obj, list | tuple):
        items = list(obj)
        if (
            _key is not None
            and _key.lower() in {"cmd", "entrypoint", "args", "argv", "command"}
            and all(isinstance(i, str) for i in items)
        ):
            return redact_argv(items)
        return [redact_obj(i) for i in items]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def redact_parameters(params: dict[str, Any]) -> dict[str, Any]:
    """Redact runbook parameters before they are injected into a notebook or written anywhere."""
    out: dict[str, Any] = {}
    for k, v in (params or {}).items():
        if isinstance(v, str) and is_secret_name(k) and v:
            out[k] = _mark("secret")
        elif isinstance(v, list) and k in {"launch_command", "argv"}:
            out[k] = redact_argv([str(x) for x in v])
        else:
            out[k] = redact_obj(v, k)
    return out
