"""The one place secrets are removed, before anything is written.

Standard library only, on purpose: ``probe.py`` embeds this file's source when it is copied
onto a node where nothing can be installed, so both paths redact with the same rules.

Rules (each replaces the secret with a ``<redacted:kind>`` marker and keeps the name, so a
reviewer still sees *that* a token was set):

- names that look secret: a part (split on ``_``, ``-``, ``.`` and camelCase) TOKEN, KEY, SECRET,
  PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL(S), AUTH, COOKIE, PRIVATE…; a part containing
  PASSWORD/PASSWD/PASSPHRASE/SECRET or ending in TOKEN/APIKEY (``PGPASSWORD``, ``HFTOKEN``);
  PASS as the last of several parts (``DB_PASS``); a few known names (``MYSQL_PWD``);
  everything ``AWS_*``. A name whose last part says it is a reference (``…_ENV``, ``…_FILE``,
  ``…_PATH``) or a measure (``…_COUNT``, ``…_IDS``, ``…_SECONDS``) is not a secret;
- command-line flags with such a name: ``--api-key X Y`` (every value up to the next ``-``
  argument), ``--api-key=X``, and the list forms ``'--api-key', 'X'`` / ``"--api-key", "X"``;
- ``NAME=value``, ``name: value``, ``'name': 'value'``, ``name='value'`` and bracketed lists
  (``'api_key': ['k1', 'k2']``) in text, also inside the quoted value of a harmless name;
- credentials in URLs (``https://user:pass@host``, ``redis://:pw@host``, ``@`` in the password)
  and secret query parameters (``?token=``);
- ``Authorization: Bearer …`` / ``Basic …`` headers;
- a signature outside a URL (``sig=…`` of an Azure SAS in a message, long values only);
- proxy credentials without a scheme (``http_proxy=user:pw@proxy:3128``, ``--proxy u:pw@h``);
- ``-p PW`` after ``login`` / ``pull`` whatever the tool (``registry login -u bob -p PW``);
- well-known token shapes anywhere: AWS access key ids and STS session tokens, ``hf_…``,
  ``sk-…``, GitHub ``ghp_…``/``github_pat_…``, Slack ``xox?-…``, Google ``AIza…``, JWTs, npm
  ``npm_…``, Stripe ``sk_live_…``/``rk_live_…``, Docker ``dckr_pat_…``, PEM private-key blocks.

A private key spans lines, and its body lines hold no secret shape: every path that reads text a
line at a time (``redact_text``, ``LineRedactor``, ``redact_env_text`` for env files, a list of
strings in ``redact_obj``) goes through one ``_PemState``, which blanks a block through its END.

``mask_secret`` masks a secret the caller knows (an API key) in any letter case and by its heads.

Numbers and booleans are never replaced because of the name of their key: a count is far more
common than a numeric secret in JSON.

Every pattern is linear in the length of its input (a name is anchored at the start of a word
and at most 128 characters long), and ``LineRedactor`` keeps only the first ``LINE_CAP_CHARS``
of a line: the rest of an over-long line is dropped, never passed through.

Redaction is idempotent: running it twice gives the same text.

Speed: each single-line rule names the words a line must hold for it to change anything (token
prefixes, tool names, the words of secret names — taken from the rules' own tables), and a line
holding none of them is not read by that rule; a whole text is gated at once with fast scans
(``_hot_lines``). A short text is redacted once per process, and an output is remembered as
redacted. ``tests/test_redact_gates.py`` holds the gated path equal to every rule on every line.
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import Any

__all__ = [
    "MARK",
    "LINE_CAP_CHARS",
    "is_secret_name",
    "redact_text",
    "redact_env",
    "redact_env_text",
    "redact_argv",
    "redact_obj",
    "redact_parameters",
    "redact_markup",
    "redact_markup_obj",
    "LineRedactor",
    "mask_secret",
]

MARK = "<redacted:{}>"
#: Longest line ``LineRedactor`` keeps; the rest of a longer line is dropped with a note.
LINE_CAP_CHARS = 64 * 1024

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
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "PRIVATE",
        "ACCESSKEY",
        "SECRETKEY",
        "PAT",
        "HFTOKEN",
    }
)
# A part that is a secret wherever it appears inside a part (PGPASSWORD, CLIENTSECRET) …
_SECRET_INFIXES = ("PASSWORD", "PASSWD", "PASSPHRASE", "SECRET")
_SECRET_INFIX = re.compile("|".join(_SECRET_INFIXES))
# … or at the end of one (HFTOKEN, OPENAIAPIKEY) — but not TOKENS, TOKENIZER.
_SECRET_SUFFIX = ("TOKEN", "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY")
# Whole names that hold a secret without any of the parts above.
_KNOWN_SECRET = frozenset({"MYSQL_PWD", "SSHPASS", "BW_SESSION", "AZURE_STORAGE_CONNECTION_STRING"})
# A last part that makes the name a reference to a secret (a variable name, a file), not one.
_REFERENCE_SUFFIXES = frozenset({"ENV", "VAR", "VARIABLE", "NAME", "FILE", "PATH", "DIR"})
# A last part that makes the name a measure or a description of a secret-ish thing, not one:
# token_count, prompt_token_ids, time_to_first_token_seconds, key_type, KeyError.
_MEASURE_SUFFIXES = frozenset(
    {
        "COUNT",
        "COUNTS",
        "ID",
        "IDS",
        "SECONDS",
        "SECS",
        "MS",
        "LEN",
        "LENGTH",
        "LIMIT",
        "SIZE",
        "NUM",
        "TOTAL",
        "RATE",
        "BUDGET",
        "INDEX",
        "IDX",
        "TYPE",
        "KIND",
        "MODE",
        "USAGE",
        "ERROR",
        "EXCEPTION",
        "WARNING",
    }
)
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
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_secret_name(name: str) -> bool:
    """True when an env var, flag or JSON key name looks like it holds a secret.

    Logs repeat the same few names on every line, so the answer for a short name is remembered.
    """
    if type(name) is str and len(name) <= 256:
        return _is_secret_name_cached(name)
    return _is_secret_name(name)


def _is_secret_name(name: str) -> bool:
    raw = name.strip().strip("-'\"")
    if len(raw) > 256:
        return False
    upper = raw.upper().replace("-", "_").replace(".", "_")
    if not upper or upper in _NOT_SECRET:
        return False
    if upper in _KNOWN_SECRET:
        return True
    parts = [p for p in _CAMEL.sub("_", raw).upper().replace("-", "_").replace(".", "_").split("_") if p]
    if not parts:
        return False
    if len(parts) > 1 and parts[-1] in _REFERENCE_SUFFIXES:
        return False  # API_KEY_ENV, HF_TOKEN_PATH: the name of where a secret lives, not the secret
    if upper.startswith("AWS_"):
        return True
    if len(parts) > 1 and parts[-1] in _MEASURE_SUFFIXES:
        return False  # token_count, prompt_token_ids, KeyError: about a secret-ish thing, not one
    if len(parts) > 1 and parts[-1] == "PASS":
        return True  # DB_PASS, SMTP_PASS; a bare "pass" is a pass number
    for p in parts:
        if p in _SECRET_PARTS or _SECRET_INFIX.search(p) or p.endswith(_SECRET_SUFFIX):
            return True
    return False


_is_secret_name_cached = functools.lru_cache(maxsize=8192)(_is_secret_name)


def _minimal_words(words: set[str]) -> tuple[str, ...]:
    """The words none of which contains another: a text holds one of ``words`` iff it holds one of these."""
    kept: list[str] = []
    for w in sorted(words, key=len):
        if not any(k in w for k in kept):
            kept.append(w)
    return tuple(kept)


# Every secret name holds one of these words (upper-cased, as ``is_secret_name`` compares): its
# parts, infixes and suffixes, a part of each known name, AWS (``AWS_*``) and PASS (``DB_PASS``);
# with, for each, whether a part of the name must start at it and end after it. A word is only
# where to look: the run of name characters around it is then asked (``_secret_run``). Words
# that hold another word are left to that one (KEY finds APIKEY), where it must sit made looser.
def _name_gates() -> tuple[tuple[str, bool, bool], ...]:
    want: dict[str, tuple[bool, bool]] = {}

    def add(word: str, start: bool, end: bool) -> None:
        old = want.get(word)
        want[word] = (start, end) if old is None else (old[0] and start, old[1] and end)

    for w in (*_SECRET_PARTS, *(n.split("_")[0] for n in _KNOWN_SECRET), "AWS", "PASS"):
        add(w, True, True)
    for w in _SECRET_SUFFIX:
        add(w, False, True)
    for w in _SECRET_INFIXES:
        add(w, False, False)
    kept = _minimal_words(set(want))
    gates = []
    for k in kept:
        held_by = [(w, *want[w]) for w in want if k in w]
        start = all(ws and w.startswith(k) for w, ws, _ in held_by)
        end = all(we and w.endswith(k) for w, _, we in held_by)
        gates.append((k, start, end))
    return tuple(gates)


_NAME_GATES = _name_gates()
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_LOWER_DIGIT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


# The characters a name is made of in every rule that reads one (``_KV``, ``_FLAG_HEAD``,
# ``_URL_QUERY``): a name is a whole run of them (a flag: a piece of a run between dots).
_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_RUN_MAX = 260  # longer than any name a rule reads (128) and than is_secret_name reads (256)


def _secret_run(line: str, i: int, j: int) -> bool:
    """Whether the run of name characters around ``line[i:j]``, or a piece of it between dots, is a
    secret name; True when the run is too long to tell (every cost here stays bounded)."""
    a, b, n = i, j, len(line)
    while a > 0 and line[a - 1] in _RUN_CHARS:
        a -= 1
        if i - a > _RUN_MAX:
            return True
    while b < n and line[b] in _RUN_CHARS:
        b += 1
        if b - j > _RUN_MAX:
            return True
    run = line[a:b]
    if is_secret_name(run):
        return True
    return "." in run and any(is_secret_name(piece) for piece in run.split(".") if piece)


def _name_at(line: str, i: int, j: int, start: bool, end: bool) -> bool:
    """Whether the gate word at ``line[i:j]`` sits where a part must (see ``_NAME_GATES``) and its
    run is a secret name."""
    if start and i > 0 and line[i - 1] in _ALNUM and not (line[i - 1] in _LOWER_DIGIT and line[i] in _UPPER):
        return False
    if end and j < len(line) and line[j] in _ALNUM and not (line[j - 1] in _LOWER_DIGIT and line[j] in _UPPER):
        return False
    return _secret_run(line, i, j)


def _holds_name(line: str, up: str) -> bool:
    """Whether an ASCII ``line`` (``up``: upper-cased) holds a name ``is_secret_name`` accepts."""
    for word, start, end in _NAME_GATES:
        i = up.find(word)
        while i != -1:
            if _name_at(line, i, i + len(word), start, end):
                return True
            i = up.find(word, i + 1)
    return False


def _mark(kind: str) -> str:
    return MARK.format(kind)


_MARKER_RE = re.compile(r"<redacted:[\w.-]+>")
_NOT_A_VALUE = frozenset({"", "none", "null", "nil", "true", "false", "undefined"})
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")

# --- value-shaped secrets, found anywhere -------------------------------------------------
# Each starts at a word start that no preceding token character may extend (lookbehind), so a
# long run of token characters is scanned once, not once per position.
# (the literal prefixes a token starts with, the rest of its shape, kind): the prefixes are both
# the start of the pattern and the cheap test that lets a line without any of them skip it.
_TOKEN_SHAPES: list[tuple[tuple[str, ...], str, str]] = [
    (("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"), r"[0-9A-Z]{16}\b", "aws-key"),
    (("hf_",), r"[A-Za-z0-9]{20,}\b", "hf-token"),
    (("sk-",), r"(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}", "api-key"),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"[A-Za-z0-9]{30,}\b", "github-token"),
    (("github_pat_",), r"[A-Za-z0-9_]{22,}\b", "github-token"),
    (tuple(f"xox{c}-" for c in "abposr"), r"[A-Za-z0-9-]{10,}", "slack-token"),
    (("AIza",), r"[0-9A-Za-z_-]{35}(?![\w-])", "google-api-key"),
    (("eyJ",), r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "jwt"),
    (("nvapi-",), r"[A-Za-z0-9_-]{16,}", "nvidia-api-key"),
    (("glpat-",), r"[A-Za-z0-9_-]{16,}", "gitlab-token"),
    # AWS STS session tokens: base64 of a fixed binary header, then hundreds of base64 characters
    (("IQoJb3JpZ2lu", "FwoGZXIvYXdz", "AQoDYXdz"), r"[A-Za-z0-9+/=%]{24,}", "aws-session-token"),
    (("npm_",), r"[A-Za-z0-9]{30,}\b", "npm-token"),
    (("sk_live_", "rk_live_", "sk_test_", "rk_test_"), r"[A-Za-z0-9]{16,}\b", "stripe-key"),
    (("dckr_pat_", "dckr_oat_"), r"[A-Za-z0-9_-]{16,}", "docker-token"),
]
_TOKEN_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, heads)) + ")" + rest), kind)
    for heads, rest, kind in _TOKEN_SHAPES
]

# PEM (``BEGIN RSA PRIVATE KEY``) and PGP (``BEGIN PGP PRIVATE KEY BLOCK``) private keys. A block
# is blanked through its END line; without one, only what looks like key material (base64 lines,
# armour headers) is blanked, at most PEM_MAX_LINES lines: a stray BEGIN line in a log must not
# blank the rest of the log (and with it the error that explains the incident).
PEM_MAX_LINES = 2000
_PEM_HEAD = r"-----BEGIN ([A-Z0-9 ]{0,64})PRIVATE KEY( BLOCK|)-----"
# the body cannot cross another "-----", so each BEGIN is scanned only up to the next marker
_PEM_ONE = re.compile(_PEM_HEAD + r"(?:[\w+/=\s:,.()\\]|-(?!----)){0,262144}?-----END \1PRIVATE KEY\2-----")
# no END in reach: the BEGIN line and the key material right after it (escaped newlines too)
_PEM_OPEN = re.compile(_PEM_HEAD + r"(?:\\[rn]|[A-Za-z0-9+/=]){0,262144}")
_PEM_BEGIN = re.compile(_PEM_HEAD)
_PEM_END = re.compile(r"-----END ([A-Z0-9 ]{0,64})PRIVATE KEY( BLOCK)?-----")
_PEM_BODY_LINE = re.compile(
    r"(?:\S{0,40}\d{4}-\d\d-\d\d[T ][\d:.,]{5,20}Z?\s+)?"  # `docker logs --timestamps` prefix
    r"(?:[A-Za-z0-9+/=]{0,128}|(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset): .{0,200})"
)

# --- structural secrets ---------------------------------------------------------------------
_AUTH_HEADER = re.compile(
    r"(?i)(?<![\w-])((?:proxy-)?authorization[ \t]{0,8}[:=][ \t]{0,8}['\"]?)"
    r"(?:(bearer|basic|token|digest)[ \t]{1,8})?([^\s'\",]+)"
)
_BEARER = re.compile(r"(?i)(?<![\w-])(bearer[ \t]{1,8})([A-Za-z0-9._~+/=-]{8,})")
# user may be empty (redis://:pw@host); the password runs to the LAST @ before the host (p@ss).
_URL_CRED = re.compile(r"(?<![A-Za-z0-9+.-])([a-zA-Z][a-zA-Z0-9+.-]{0,31}://)([^/\s:@'\"<>]*):([^/\s'\"<>]+)@")
# user part only (http://TOKEN@host): in a web URL that is an access token far more often than a name
_URL_USER = re.compile(r"(?<![A-Za-z0-9+.-])((?:https?|wss?|ftps?)://)([^/\s:@'\"<>]{1,256})@(?=[\w\[])")
_URL_QUERY = re.compile(r"([?&;])([A-Za-z0-9_.-]{1,128})=([^&#\s'\"<>]+)")
# A signature outside a URL (``sig=…`` of an Azure SAS pasted into a message): long values only,
# so ``sig=15`` (a signal number) and ``signature=valid`` stay.
_FREE_SIGNATURE = re.compile(r"(?i)(?<![\w.%-])((?:x-amz-)?sig(?:nature)?=)([A-Za-z0-9%+/=_.~-]{12,})")
# Credentials in a proxy setting without a scheme: ``http_proxy=user:pw@proxy:3128``,
# ``--proxy user:pw@host`` (with a scheme, ``_URL_CRED`` reads it). The password runs to the last
# ``@`` before the host; both parts are bounded, so each proxy word costs a bounded read.
_PROXY_HEAD = r"(?:[A-Za-z0-9]{1,16}[_.-]){0,4}proxy(?:[_.-][A-Za-z0-9]{1,16}){0,2}"
# (``name:tag@sha256:…`` is an image reference, not credentials)
_PROXY_USERINFO = r"([^\s:/@'\"<>]{0,128}):([^\s/'\"<>]{1,128})@(?=[\w\[])(?!sha(?:256|512):)"
_PROXY_CRED = re.compile(
    r"(?i)(?<![\w.-])((?:--?" + _PROXY_HEAD + r"(?:[ \t]{1,8}|=)"  # a flag: --proxy u:pw@h
    r"|['\"]?" + _PROXY_HEAD + r"['\"]?[ \t]{0,8}[:=][ \t]{0,8})['\"]?)" + _PROXY_USERINFO  # a pair
)
# the same credentials as the whole value of a proxy-named variable or key (the name is elsewhere)
_PROXY_VALUE = re.compile(r"^" + _PROXY_USERINFO)

# A flag (optionally the quoted element of a list); what follows is read by _redact_flags.
_FLAG_HEAD = re.compile(r"(?<![\w-])(['\"]?)(--?[A-Za-z][\w-]{0,127})")
_FLAG_EQ_VALUE = re.compile(r"=(\"(?:\\.|[^\"\\])*\"?|'(?:\\.|[^'\\])*'?|[^\s'\"]+)")
_FLAG_WS_VALUE = re.compile(r"[ \t]+(\"(?:\\.|[^\"\\])*\"?|'(?:\\.|[^'\\])*'?|[^\s'\"]+)")
_FLAG_LIST_VALUE = re.compile(r"[ \t]*,[ \t]*(?:(\")((?:\\.|[^\"\\])*)\"|(')((?:\\.|[^'\\])*)')")
_SHELL_STOP = ("|", "&", ";", ">", "<", "\\", "#", ")")

# name=value, name: value, 'name': 'value', "name" = "value". Only a secret name's value is read
# (_KV_VALUE at the end of the match), so the quoted value of a harmless name is scanned for
# pairs of its own, and a long run of harmless pairs costs nothing more than reading it.
# The quote may be JSON-escaped (\"api_key\": \"…\" in a log line); a TAB alone also separates
# (KEY<TAB>value tables).
# The quote may be escaped once or more (\"api_key\": \"…\" in a JSON log line, \\" in a repr
# of one); a TAB alone also separates (KEY<TAB>value tables), or its escape ``\t`` in a repr.
_KV = re.compile(r"(?<![\w.-])(\\{0,3}['\"]?)([A-Za-z_][\w.-]{0,127})\1([ \t]{0,8}[:=][ \t]{0,8}|\t{1,8}|(?:\\t){1,8})")
_KV_VALUE = re.compile(
    r"(\\{1,3})\"(?:[^\"\\]|\\(?![\\\"]))*(?:\1\")?|\[[^\[\]]*\]?|\"(?:\\.|[^\"\\])*\"?|'(?:\\.|[^'\\])*'?|[^\s,;'\"&<]+"
)
_CLOSERS = ")]}"
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest"})

_CUT_NOTE = re.compile(r" ?\[vllm-runbooks: line cut at \d+ of \d+ characters; the rest was not kept\]$")


# --- secrets given to well-known tools by a short option ------------------------------------
# docker login -p PW, mysql -pPW, sshpass -p PW, redis-cli -a PW, curl -u user:PW. Only after the
# tool's own name (``-p 8000:8000`` is a port to ``docker run``), up to a shell separator.
_CONTAINER_TOOLS = frozenset({"docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane"})
_MYSQL_TOOLS = frozenset({"mysql", "mysqldump", "mysqladmin", "mariadb", "mariadb-dump", "mysqlsh"})
_CLI_TOOLS = (
    *sorted(_CONTAINER_TOOLS),
    "sshpass",
    "redis-cli",
    *sorted(_MYSQL_TOOLS, key=lambda t: (len(t), t)),
    "curl",
)
_CLI_TOOL = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, _CLI_TOOLS)) + r")(?![\w.-])")
# ``login`` / ``pull`` name what ``-p`` is whatever the tool (a wrapper script, ``singularity``, a
# label that leaves the tool out): ``registry login -u bob -p PW``. ``git pull -p`` is a prune.
_SUBCOMMANDS = ("login", "pull")
_SUBCOMMAND = re.compile(r"(?<![\w.-])(?<!git )(" + "|".join(_SUBCOMMANDS) + r")(?![\w.-])")
_CLI_TOKEN = re.compile(r"[ \t]+(\"(?:\\.|[^\"\\])*\"?|'[^']*'?|[^\s'\"|;&<>()]+)")
_CLI_MAX_TOKENS = 64


def _cli_hidden(tool: str, args: list[str]) -> dict[int, int]:
    """Which of ``args`` (the words after ``tool``) hold a secret: index → offset where it starts.

    An offset of -1 means "after the first colon" (``curl -u user:PW`` keeps the user name).
    """
    bare = [a.strip("'\"") for a in args]
    hidden: dict[int, int] = {}
    if tool in _SUBCOMMANDS:
        short: tuple[str, ...] = ("-p",)
    elif tool in _CONTAINER_TOOLS:
        if "login" not in bare:
            return {}
        short = ("-p",)
    elif tool == "sshpass":
        short = ("-p",)
    elif tool == "redis-cli":
        short = ("-a", "--pass")
    elif tool in _MYSQL_TOOLS:
        short = ()
        for i, a in enumerate(bare):
            if len(a) > 2 and a.startswith("-p") and not a.startswith("--"):
                hidden[i] = 2  # -pPW; a lone -p prompts, and the next word is a database
        return hidden
    elif tool == "curl":
        for i, a in enumerate(bare):
            if a in ("-u", "--user", "-U", "--proxy-user") and i + 1 < len(args):
                hidden[i + 1] = -1
            elif a.startswith(("--user=", "--proxy-user=")) or (len(a) > 2 and a[:2] in ("-u", "-U") and a[2] != "-"):
                hidden[i] = -1
        return hidden
    else:
        return {}
    for i, a in enumerate(bare):
        if a in short and i + 1 < len(args) and not bare[i + 1].startswith("-"):
            hidden[i + 1] = 0
        elif len(a) > 2 and a[:2] in short and a[1] != "-" and not a.startswith("--"):
            hidden[i] = 3 if a[2] == "=" else 2
    return hidden


def _hide_word(word: str, offset: int, kind: str) -> str:
    """``word`` with its secret part (from ``offset``; -1: after the first colon) replaced."""
    q = word[0] if word[:1] in ("'", '"') else ""
    core = word[len(q) :]
    end = ""
    if q and core.endswith(q):
        core, end = core[:-1], q
    if offset == -1:
        user, colon, secret = core.partition(":")
        if not colon or not secret or _MARKER_RE.fullmatch(secret):
            return word
        return f"{q}{user}:{_mark(kind)}{end}"
    head, secret = core[:offset], core[offset:]
    if not secret or _MARKER_RE.fullmatch(secret) or secret.startswith("<redacted:"):
        return word
    return f"{q}{head}{_mark(kind)}{end}"


def _redact_cli(text: str) -> str:
    """Secrets passed to a known tool by a short option, in a command line inside ``text``."""
    return _redact_words_after(text, _CLI_TOOL, (_CLI_TOOL,))


def _redact_subcommands(text: str) -> str:
    """``-p PW`` after ``login`` / ``pull`` in free text, whichever tool (if any) comes first."""
    return _redact_words_after(text, _SUBCOMMAND, (_CLI_TOOL, _SUBCOMMAND))


def _redact_words_after(text: str, head: re.Pattern[str], stops: tuple[re.Pattern[str], ...]) -> str:
    """The words after each ``head`` match (up to a shell separator or a ``stops`` word) that
    ``_cli_hidden`` says hold a secret, replaced."""
    if not head.search(text):
        return text
    out: list[str] = []
    done = 0
    for m in head.finditer(text):
        if m.start() < done:
            continue
        spans: list[tuple[int, int]] = []
        at = m.end()
        while len(spans) < _CLI_MAX_TOKENS and (tm := _CLI_TOKEN.match(text, at)):
            if any(stop.fullmatch(tm.group(1)) for stop in stops):
                break  # the next tool's words are its own: each word is read once
            spans.append((tm.start(1), tm.end(1)))
            at = tm.end()
        words = [text[a:b] for a, b in spans]
        tool = m.group(1)
        for i, offset in sorted(_cli_hidden(tool, words).items()):
            a, b = spans[i]
            out.append(text[done:a])
            out.append(_hide_word(words[i], offset, f"{tool}-password"))
            done = b
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _is_marker_only(value: str) -> bool:
    """A value that is already a redaction marker (possibly quoted or in a list)."""
    core = value.strip().strip("[]").strip()
    items = [i.strip().strip("'\"") for i in core.split(",")] if core else []
    return bool(items) and all(_MARKER_RE.fullmatch(i) for i in items)


def _is_not_a_value(value: str) -> bool:
    core = value.strip().strip("[]").strip().strip("'\"").strip()
    return core.lower() in _NOT_A_VALUE


def _redact_flags(text: str) -> str:
    """``--api-key X Y``, ``--api-key=X``, ``'--api-key', 'X', 'Y'``: every value of a secret flag."""
    out: list[str] = []
    done = 0  # text[:done] is in out
    skip = 0  # flags before this lie inside a value already read
    for m in _FLAG_HEAD.finditer(text):
        if m.start() < skip:
            continue
        quote, flag = m.group(1), m.group(2)
        if not is_secret_name(flag):
            continue
        kind = _mark(flag.lstrip("-").lower())
        at = m.end(2)
        pieces: list[tuple[int, int, str]] = []  # spans to replace
        eq = _FLAG_EQ_VALUE.match(text, at)
        if eq:
            value = eq.group(1)
            if not _MARKER_RE.fullmatch(value.strip("'\"")):
                q = value[0] if value[0] in "'\"" else ""
                pieces.append((eq.start(1), eq.end(1), f"{q}{kind}{q}"))
            at = eq.end()
        elif quote and text.startswith(quote, at):
            at += 1  # a list element: '--api-key', 'k1', 'k2'
            while lm := _FLAG_LIST_VALUE.match(text, at):
                g = 2 if lm.group(1) else 4
                value = lm.group(g) or ""
                if value.startswith("-"):
                    break
                if value and not _MARKER_RE.fullmatch(value):
                    pieces.append((lm.start(g), lm.end(g), kind))
                at = lm.end()
        else:
            while wm := _FLAG_WS_VALUE.match(text, at):
                value = wm.group(1)
                if _MARKER_RE.fullmatch(value.strip("'\"")):
                    at = wm.end()  # already redacted (a token shape): keep it, read on
                    continue
                if value.startswith(("-", *_SHELL_STOP)):
                    break
                q = value[0] if value[0] in "'\"" else ""
                pieces.append((wm.start(1), wm.end(1), f"{q}{kind}{q}"))
                at = wm.end()
        for start, end, repl in pieces:
            out.append(text[done:start])
            out.append(repl)
            done = end
        skip = at
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _kv_replacement(name: str, sep: str, value: str) -> str | None:
    """The replacement for ``value`` of a secret ``name``, or None to keep it."""
    if not is_secret_name(name) or _is_marker_only(value) or _is_not_a_value(value):
        return None
    secret = _mark("secret")
    if value.startswith("\\"):  # an escaped string: \"value\" (JSON in a log), \\"value\\" (its repr)
        quote = value[: len(value) - len(value.lstrip("\\")) + 1]
        inner = value[len(quote) : -len(quote)] if value.endswith(quote) and len(value) >= 2 * len(quote) else ""
        inner = inner or value[len(quote) :]
        if not inner or _MARKER_RE.fullmatch(inner) or inner.lower() in _NOT_A_VALUE:
            return None
        return f"{quote}{secret}{quote}"
    if value.startswith("["):
        inner = value[1:-1] if value.endswith("]") else value[1:]
        q = next((c for c in inner if c in "'\""), "")
        return f"[{q}{secret}{q}]" if inner.strip() else None
    if value[0] in "'\"":
        q = value[0]
        if value == q * 2:
            return None  # ''
        return f"{q}{secret}{q}"
    # a bare value: keep closing brackets that end it; a number after ':' is a count (JSON, YAML)
    core = value.rstrip(_CLOSERS)
    tail = value[len(core) :]
    if not core or _MARKER_RE.match(core) or core.lower() in _NOT_A_VALUE:
        return None
    if ":" in sep and _NUMBER.fullmatch(core):
        return None
    if "authorization" in name.lower() and core.lower() in _AUTH_SCHEMES:
        return None  # Authorization: Bearer <redacted:…> — the scheme is not the secret
    return f"{secret}{tail}"


def _redact_pairs(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _KV.finditer(text):
        if m.start() < pos:
            continue
        name, sep = m.group(2), m.group(3)
        if not is_secret_name(name):
            continue
        vm = _KV_VALUE.match(text, m.end())
        if not vm:
            continue
        value = vm.group(0)
        repl = _kv_replacement(name, sep, value)
        if repl is None:
            continue
        out.append(text[pos : m.end()])
        out.append(repl)
        pos = m.end() + len(value)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _query_repl(m: re.Match[str]) -> str:
    lead, name, value = m.groups()
    if not is_secret_name(name) and name.lower() not in {"sig", "signature", "code", "x-amz-signature"}:
        return m.group(0)
    if _MARKER_RE.fullmatch(value):
        return m.group(0)
    return f"{lead}{name}={_mark('url-token')}"


def _auth_repl(m: re.Match[str]) -> str:
    head, scheme, value = m.groups()
    if _MARKER_RE.fullmatch(value) or value.startswith("<redacted:"):
        return m.group(0)
    return f"{head}{(scheme + ' ') if scheme else ''}{_mark('authorization')}"


def _redact_free_signature(text: str) -> str:
    return _FREE_SIGNATURE.sub(lambda m: m.group(1) + _mark("signature"), text)


def _redact_proxy_credentials(text: str) -> str:
    return _PROXY_CRED.sub(lambda m: m.group(1) + _mark("url-credentials") + "@", text)


def _proxy_value(name: str, value: Any) -> Any:
    """A proxy-named variable's value without the ``user:pw@`` it may start with (no scheme)."""
    if isinstance(value, str) and "@" in value and "PROXY" in name.upper():
        return _PROXY_VALUE.sub(_mark("url-credentials") + "@", value, count=1)
    return value


def _redact_url_credentials(text: str) -> str:
    return _URL_CRED.sub(lambda m: f"{m.group(1)}{_mark('url-credentials')}@", text)


def _redact_url_user(text: str) -> str:
    return _URL_USER.sub(
        lambda m: m.group(0) if _MARKER_RE.fullmatch(m.group(2)) else f"{m.group(1)}{_mark('url-credentials')}@", text
    )


def _redact_auth_header(text: str) -> str:
    return _AUTH_HEADER.sub(_auth_repl, text)


def _redact_bearer(text: str) -> str:
    return _BEARER.sub(lambda m: m.group(1) + _mark("bearer"), text)


def _redact_query(text: str) -> str:
    return _URL_QUERY.sub(_query_repl, text)


_TOKEN_RULES = [
    (heads, pattern, _mark(kind)) for (heads, _, kind), (pattern, _) in zip(_TOKEN_SHAPES, _TOKEN_PATTERNS, strict=True)
]


def _redact_tokens(text: str) -> str:
    for heads, pattern, mark in _TOKEN_RULES:
        for head in heads:
            if head in text:
                text = pattern.sub(mark, text)
                break
    return text


# The single-line rules in the order they run, each with what a line must hold for the rule to
# change it: (rule, words as written, words in any letter case, whether a secret name would do, a
# character it needs too). The words come from the rules' own data (token prefixes, tool names,
# the parts of secret names). An ASCII line is read by a rule only when these are there; a
# non-ASCII line goes through every rule (its case mapping is not ASCII's).
_LINE_RULES: list[tuple[Any, tuple[str, ...], tuple[str, ...], bool, str]] = [
    (_redact_url_credentials, ("://",), (), False, "@"),
    (_redact_url_user, ("://",), (), False, "@"),
    (_redact_proxy_credentials, (), ("PROXY",), False, "@"),
    (_redact_auth_header, (), ("AUTHORIZATION",), False, ""),
    (_redact_bearer, (), ("BEARER",), False, ""),
    (_redact_query, (), ("SIG=", "SIGNATURE=", "CODE="), True, "="),  # ?token=, &sig=, ?code=
    (_redact_free_signature, (), ("SIG=", "SIGNATURE="), False, "="),
    (_redact_tokens, tuple(h for heads, _, _ in _TOKEN_SHAPES for h in heads), (), False, ""),
    (_redact_cli, _minimal_words(set(_CLI_TOOLS)), (), False, ""),
    (_redact_subcommands, _SUBCOMMANDS, (), False, "-p"),
    (_redact_flags, (), (), True, "-"),
    (_redact_pairs, (), (), True, ""),
]
# Any rule at all: its words (those contained in another word of the list dropped).
_ANY_WORDS = _minimal_words({w for rule in _LINE_RULES for w in rule[1]})
_ANY_UPPER = _minimal_words({w for rule in _LINE_RULES for w in rule[2]})


def _redact_line(text: str) -> str:
    """All single-line rules; shared by ``redact_text`` and the streaming ``LineRedactor``."""
    if not text:
        return text
    if not text.isascii():
        return _redact_line_ungated(text)
    up = text.upper()
    for w in _ANY_WORDS:
        if w in text:
            break
    else:
        for w in _ANY_UPPER:
            if w in up:
                break
        else:
            if not _holds_name(text, up):
                return text
    names: bool | None = None
    for rule, words, any_case, by_name, needs in _LINE_RULES:
        if needs and needs not in text:
            continue
        if not (any(w in text for w in words) or any(w in up for w in any_case)):
            if not by_name:
                continue
            if names is None:
                names = _holds_name(text, up)
            if not names:
                continue
        new = rule(text)
        if new != text:
            text, up, names = new, new.upper(), None
    return text


def _redact_line_ungated(text: str) -> str:
    """Every single-line rule, whatever the line holds (non-ASCII lines; the reference the gates are tested on)."""
    for rule, _, _, _, _ in _LINE_RULES:
        if text:
            text = rule(text)
    return text


def redact_text(text: str) -> str:
    """Redact free text: logs, command lines, config files, env dumps, JSON text."""
    if not isinstance(text, str) or not text:
        return text
    if "\n" not in text:
        if len(text) <= _SHORT and type(text) is str:
            return _redact_short(text)
        return _PemState()(text)
    lines = text.split("\n")
    if "PRIVATE KEY" in text:  # a key block spans lines: each line in order, through the block state
        state = _PemState()
        return "\n".join(state(line) for line in lines)
    hot = _hot_lines(text, lines)
    for k in hot:
        lines[k] = _redact_line(lines[k])
    return "\n".join(lines)


def _scanners(words: tuple[str, ...]) -> list[Any]:
    """One fast scan per first character of ``words``: ``bytes.find`` for a lone word, else a
    pattern that starts with that character (the regex engine skips to it before trying the rest)."""
    by_head: dict[str, list[str]] = {}
    for w in words:
        by_head.setdefault(w[0], []).append(w)
    out: list[Any] = []
    for head, group in sorted(by_head.items()):
        if len(group) == 1:
            out.append(group[0].encode())
        else:
            rest = b"|".join(re.escape(w[1:].encode()) for w in sorted(group, key=len, reverse=True))
            out.append(re.compile(re.escape(head.encode()) + b"(?:" + rest + b")"))
    return out


_ANY_WORDS_SCANS = _scanners(_ANY_WORDS)
_ANY_UPPER_SCANS = _scanners(_ANY_UPPER)
_NAME_GATES_BYTES = tuple((w.encode(), start, end) for w, start, end in _NAME_GATES)


def _hot_lines(text: str, lines: list[str]) -> set[int]:
    """The lines of ``text`` (split into ``lines``) that ``_redact_line`` may change.

    The same test as ``_redact_line``'s first one, made once over the whole text: the words are
    looked for with fast scans (``_scanners``), so a line without any costs nothing. Every
    non-ASCII line is hot (``_redact_line`` reads it with every rule).
    """
    data = text.encode("ascii", "replace")  # one byte per character, so offsets match ``text``
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    hot: set[int] = set()
    if not text.isascii():
        hot.update(k for k, line in enumerate(lines) if not line.isascii())
    up = data.upper()  # ASCII letters only, like str.upper on an ASCII line

    for where, scans in ((data, _ANY_WORDS_SCANS), (up, _ANY_UPPER_SCANS)):
        for scan in scans:
            if isinstance(scan, bytes):
                i = where.find(scan)
                while i != -1:
                    k = bisect.bisect_right(starts, i) - 1
                    hot.add(k)
                    i = where.find(scan, starts[k + 1])
            else:
                m = scan.search(where)
                while m:
                    k = bisect.bisect_right(starts, m.start()) - 1
                    hot.add(k)
                    m = scan.search(where, starts[k + 1])
    for word, start, end in _NAME_GATES_BYTES:
        i = up.find(word)
        while i != -1:
            if _name_at(text, i, i + len(word), start, end):
                k = bisect.bisect_right(starts, i) - 1
                hot.add(k)
                i = up.find(word, starts[k + 1])
            else:
                i = up.find(word, i + 1)
    return hot


#: A one-line text up to this long is redacted once per process: evidence values (GPU names,
#: versions, image env) repeat across items and nodes, and every value is redacted again when the
#: evidence is written. Redaction is idempotent, so its output is remembered as already redacted
#: too: a value redacted on read is not read by the rules again when it is written.
_SHORT = 4096
_MEMO: dict[str, str] = {}
_MEMO_CHARS = 4 * 1024 * 1024  # what the memo may hold (keys and values), then it starts afresh
_memo_size = 0


def _redact_short(text: str) -> str:
    global _memo_size
    hit = _MEMO.get(text)
    if hit is not None:
        return hit
    out = _PemState()(text)
    if _memo_size + len(text) + len(out) > _MEMO_CHARS:
        _MEMO.clear()
        _memo_size = 0
    _MEMO[text] = out
    _MEMO[out] = out
    _memo_size += len(text) + len(out)
    return out


class _PemState:
    """Line by line redaction that remembers an open private-key block (bounded, see PEM_MAX_LINES).

    The one mechanism every path that redacts text a line (or a list item) at a time goes through:
    ``redact_text``, ``LineRedactor`` (stored logs), ``redact_env_text`` (env files), lists of
    strings in ``redact_obj`` (``Env`` lists, notebook sources and outputs kept as lines). A key's
    body lines carry no secret shape of their own, so only this state can tell they are one.
    """

    def __init__(self) -> None:
        self._pem_lines = 0  # >0: inside a block whose END has not been seen

    @property
    def inside(self) -> bool:
        """Whether a key block is open (its BEGIN read, its END not yet)."""
        return self._pem_lines > 0

    def holds(self, line: str) -> bool:
        """Whether ``line`` belongs to the open key block (key material or its END line)."""
        if not self._pem_lines:
            return False
        if _PEM_END.search(line):
            return True
        return self._pem_lines < PEM_MAX_LINES and _PEM_BODY_LINE.fullmatch(line.strip()) is not None

    def __call__(self, line: str) -> str:
        if self._pem_lines:
            end = _PEM_END.search(line)
            if end:
                self._pem_lines = 0
                return _redact_line(line[end.end() :])
            if self._pem_lines < PEM_MAX_LINES and _PEM_BODY_LINE.fullmatch(line.strip()):
                self._pem_lines += 1
                return ""
            self._pem_lines = 0  # not key material: the block was cut short; read on normally
        if "PRIVATE KEY" not in line:
            return _redact_line(line)
        line = _PEM_ONE.sub(_mark("private-key"), line)
        if _PEM_BEGIN.search(line):
            self._pem_lines = 1
            line = _PEM_OPEN.sub(_mark("private-key"), line)
        return _redact_line(line)


# A character that may be part of a token: a cut line is cut before the word it falls in.
_NOT_TOKEN_CHAR = re.compile(r"[^\w+/=.~:%-]")


def _cap_line(line: str, cap: int, total: int | None = None) -> tuple[str, str]:
    """(head to redact, note to append): a line over ``cap`` keeps its head only.

    The cut goes back to the start of the word the cap falls in (a space, quote, comma…), so a
    token is kept whole or not at all — never a readable head of it. A line that already ends
    with the note (redacting a second time) keeps it.
    """
    total = max(total or 0, len(line))
    if len(line) <= cap and total == len(line):
        return line, ""
    note = _CUT_NOTE.search(line, max(0, len(line) - 200))
    if note and note.start() <= 4 * cap:
        return line[: note.start()], note.group(0)
    cut = min(cap, len(line))
    back = _NOT_TOKEN_CHAR.search(line[cut - 1 :: -1]) if cut else None  # last non-token character
    cut = cut - back.start() if back else 0
    return line[:cut], f" [vllm-runbooks: line cut at {cut} of {total} characters; the rest was not kept]"


class LineRedactor:
    """Streaming redaction for huge logs: remembers when it is inside a PEM private-key block.

    A line longer than ``cap`` characters is cut: its head is redacted and kept with a note, the
    rest is dropped (not passed through, so a secret past the cap is never written).
    """

    def __init__(self, cap: int = LINE_CAP_CHARS) -> None:
        self._state = _PemState()
        self._cap = cap

    def __call__(self, line: str, total: int | None = None) -> str:
        """Redact one line; ``total``: the line's real length when only its head was read."""
        line, note = _cap_line(line, self._cap, total)
        return self._state(line) + note

    def many(self, lines: list[tuple[str, int | None]]) -> list[str]:
        """Redact consecutive lines, each ``(line, total)`` as in a call: the same result, faster.

        The lines are gated together (``_hot_lines``), so a line no rule needs costs nothing; a
        private-key block in reach (or a line holding a newline) is read line by line instead.
        """
        caps = [_cap_line(line, self._cap, total) for line, total in lines]
        heads = [head for head, _ in caps]
        text = "\n".join(heads)
        if self._state.inside or "PRIVATE KEY" in text or text.count("\n") != len(heads) - 1:
            return [self._state(head) + note for head, note in caps]
        out = list(heads)
        for k in _hot_lines(text, heads):
            out[k] = _redact_line(heads[k])
        return [line + note for line, (_, note) in zip(out, caps, strict=True)]


_ENTITY_QUOTE = re.compile(r"&(?:#x27|#39|#x22|#34|quot|apos);")


def redact_markup(text: str) -> str:
    """Redact text that may hold HTML-escaped quotes (figure hover text, table cells).

    ``html.escape`` turns ``'api_key': 'k'`` into ``&#x27;api_key&#x27;: &#x27;k&#x27;``, which
    no text rule recognises; the quotes are read as plain quotes, and when that reveals a secret
    the result is written back with its quotes escaped.
    """
    out = redact_text(text)
    if not isinstance(out, str) or "&" not in out or not _ENTITY_QUOTE.search(out):
        return out
    plain = _ENTITY_QUOTE.sub(lambda m: '"' if m.group(0) in ("&#x22;", "&#34;", "&quot;") else "'", out)
    red = redact_text(plain)
    if red == plain:
        return out
    return red.replace("'", "&#x27;").replace('"', "&quot;")


def redact_markup_obj(obj: Any) -> Any:
    """``redact_obj`` whose strings may also hold HTML-escaped quotes (figure JSON, outputs)."""
    obj = redact_obj(obj)
    if isinstance(obj, dict):
        return {k: redact_markup_obj(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_markup_obj(v) for v in obj]
    if isinstance(obj, str):
        return redact_markup(obj)
    return obj


def redact_env(env: dict[str, Any]) -> dict[str, Any]:
    """Secret-named variables lose their value; every other value is redacted as text."""
    out: dict[str, Any] = {}
    for name, value in (env or {}).items():
        if is_secret_name(str(name)) and value not in (None, ""):
            out[name] = _mark("secret")
        elif isinstance(value, str):
            out[name] = _proxy_value(str(name), redact_text(value))
        else:
            out[name] = value
    return out


# ``NAME=`` at the start of an env file's line (``export NAME=`` in a ``.env`` file)
_ENV_ASSIGN = re.compile(r"(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.-]{0,255})=")


def redact_env_text(text: str) -> str:
    """Redact an env file: ``env`` output, ``/proc/PID/environ`` (NUL-separated) or a ``.env`` file.

    A value may span lines (``env`` prints its newlines as they are), so the file is read in
    order through one ``_PemState``: a private key under any name is blanked through its END line,
    and the lines after a secret variable's first line, up to the next ``NAME=``, are more of
    its value and are dropped. NUL-separated input comes back one variable per line, as before.
    """
    if not isinstance(text, str) or not text:
        return text
    nul = "\0" in text
    state = _PemState()
    out: list[str] = []
    secret = False  # the line read belongs to a secret variable's value
    for record in text.split("\0" if nul else "\n"):
        if nul:  # a new variable: whatever the last one's value held has ended
            state, secret = _PemState(), False
        for n, line in enumerate(record.split("\n") if nul else (record,)):
            if state.holds(line):
                red = state(line)  # key material (blanked) or the block's END line
                if not secret:
                    out.append(red)
                continue
            m = None if n else _ENV_ASSIGN.match(line)
            if m is None:
                red = state(line)
                if not secret:
                    out.append(red)
                continue
            name, value = m.group(1), line[m.end() :]
            secret = bool(value) and is_secret_name(name)
            red = state(value)  # read even when dropped: a key block may open here
            out.append(line[: m.end()] + (_mark("secret") if secret else _proxy_value(name, red)))
    return "\n".join(out)


_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def redact_argv(argv: list[str]) -> list[str]:
    """Redact an argument vector: ``--api-key X [Y…]``, ``--api-key=X``, ``NAME=value`` and text.

    vLLM's ``--api-key`` takes several values, so every argument after a secret flag is hidden
    up to the next one that starts with ``-``.
    """
    argv = [str(a) for a in argv or []]
    tool_hidden: dict[int, tuple[int, str]] = {}  # docker login -p PW, sshpass -p PW … as a list
    for t, arg in enumerate(argv):
        m = _CLI_TOOL.fullmatch(arg.rsplit("/", 1)[-1])
        if not m and arg in _SUBCOMMANDS and not (t and argv[t - 1].rsplit("/", 1)[-1] == "git"):
            m = _SUBCOMMAND.fullmatch(arg)
        if m:
            for i, offset in _cli_hidden(m.group(1), argv[t + 1 : t + 1 + _CLI_MAX_TOKENS]).items():
                tool_hidden.setdefault(t + 1 + i, (offset, f"{m.group(1)}-password"))
    out: list[str] = []
    hide = ""
    for n, arg in enumerate(argv):
        if n in tool_hidden:
            arg = _hide_word(arg, *tool_hidden[n])
        if hide:
            if not arg.startswith("-"):
                out.append(arg if _MARKER_RE.fullmatch(arg) else _mark(hide))
                continue
            hide = ""
        if arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
            if is_secret_name(flag) and value:
                out.append(f"{flag}={_mark(flag.lstrip('-').lower())}")
                continue
        elif arg.startswith("-") and is_secret_name(arg):
            out.append(arg)
            hide = arg.lstrip("-").lower()
            continue
        elif "=" in arg:
            name, _, value = arg.partition("=")
            if _SHELL_NAME.fullmatch(name) and is_secret_name(name) and value:
                out.append(f"{name}={_mark('secret')}")
                continue
        out.append(redact_text(arg))
    return out


def _secret_value(v: Any) -> Any:
    """The value of a secret-named key: strings go, numbers, booleans and None stay."""
    if isinstance(v, str):
        return v if (not v or _MARKER_RE.fullmatch(v)) else _mark("secret")
    if isinstance(v, list | tuple):
        return [_secret_value(i) for i in v]
    return redact_obj(v)


def redact_obj(obj: Any, _key: str | None = None) -> Any:
    """Recursively redact JSON-like data: secret-named keys, ``Env``-style lists, all strings."""
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        # {"name": "PGPASSWORD", "value": "…"}: the Kubernetes / ECS form of an env entry
        named = obj.get("name") if isinstance(obj.get("name"), str) else None
        secret_entry = named is not None and "value" in obj and is_secret_name(named)
        for k, v in obj.items():
            if isinstance(k, str) and is_secret_name(k) and isinstance(v, str | list | tuple):
                out[k] = _secret_value(v)
            elif secret_entry and k == "value":
                out[k] = _secret_value(v)
            elif named is not None and k == "value":
                out[k] = _proxy_value(named, redact_obj(v, str(k)))
            else:
                out[k] = _proxy_value(str(k), redact_obj(v, str(k)))
        return out
    if isinstance(obj, list | tuple):
        items = list(obj)
        if all(isinstance(i, str) for i in items):
            if _key is not None and _key.lower() in {"cmd", "entrypoint", "args", "argv", "command"}:
                return redact_argv(items)
            return _redact_lines(items)
        return [redact_obj(i) for i in items]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def _redact_lines(items: list[str]) -> list[str]:
    """A list of strings read as consecutive lines (an ``Env`` list, a notebook's source or output
    lines): a private-key block that starts in one item is blanked in the items after it."""
    if not any("PRIVATE KEY" in i for i in items):
        return [redact_text(i) for i in items]
    state = _PemState()
    return ["\n".join(state(line) for line in item.split("\n")) for item in items]


#: The shortest head of a known secret that ``mask_secret`` masks on its own.
MASK_MIN_PREFIX = 12


@functools.lru_cache(maxsize=16)
def _head_pattern(head: str) -> re.Pattern[str]:
    return re.compile(re.escape(head), re.IGNORECASE)


def mask_secret(text: str, secret: str | None, mark: str = "***", min_prefix: int = MASK_MIN_PREFIX) -> str:
    """``text`` with a secret the caller knows (an API key) masked wherever a server may echo it:
    as given, in any letter case, and cut to any head of at least ``min_prefix`` characters (an
    error message that shortens it). A secret shorter than that is masked whole only."""
    if not isinstance(text, str) or not text or not secret:
        return text
    head = secret[: min(len(secret), max(1, min_prefix))]
    pattern = _head_pattern(head)
    out: list[str] = []
    done = 0
    m = pattern.search(text)
    while m:
        j, k = m.end(), len(head)
        while j < len(text) and k < len(secret) and text[j].lower() == secret[k].lower():
            j, k = j + 1, k + 1  # the head matched: as much more of the secret as follows
        out.append(text[done : m.start()])
        out.append(mark)
        done = j
        m = pattern.search(text, j)
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


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
