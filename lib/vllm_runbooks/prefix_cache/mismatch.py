"""Why does it miss? Find where real requests stop sharing a prefix, and name what differs first.

vLLM's block hash chains from token 0, so the first differing token decides how much of a
request can come from cache. For each request the analyser takes the earlier request it shares
the longest prefix with (what the cache could offer it at best), measures that prefix in tokens
through ``/tokenize`` (messages form, the server's own chat template) when the server offers
it, else on a canonical rendering (an estimate, labelled as such), and names the component
that differs first, walking the request in the order a chat template renders it:

  model or adapter, cache_salt, chat-template arguments  (they change every block, or the hash key)
  system prompt → tool definitions → history → image → tail

(ChatML/Hermes-style templates put the tool definitions in the system block, after its text.)
A difference in the tail — the last user turn, or turns appended to an earlier request — is the
intended variation, not a mismatch.

Request bodies are the user's own data and may carry secrets (a token pasted into a system
prompt). Everything this module keeps from them — snippets, details, notes — is redacted with
``redact_text`` before it is stored, so the report, its HTML and its scraps never hold a secret.
Snippets are cut from the *redacted* texts: cutting first could leave a fragment of a token
that the token patterns no longer recognise.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..client import EndpointClient
from ..display import banner, esc, html_table
from ..records import Record
from ..redact import redact_text
from .experiment import common_prefix_len

# Components, in the order they are checked (and, roughly, rendered).
MODEL = "model_or_adapter"
SALT = "cache_salt"
TEMPLATE = "chat_template_args"
SYSTEM = "system_prompt"
TOOLS = "tool_definitions"
HISTORY = "history"
IMAGE = "image"
TAIL = "tail"
IDENTICAL = "identical"
FIRST = "first_request"
COMPONENTS = (MODEL, SALT, TEMPLATE, SYSTEM, TOOLS, HISTORY, IMAGE, TAIL, IDENTICAL)
NOT_A_MISMATCH = {TAIL, IDENTICAL, FIRST}

TEMPLATE_KEYS = (
    "chat_template",
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
    "documents",
    "add_special_tokens",
)
#: request fields passed to /tokenize so its rendering matches what the server served.
TOKENIZE_KEYS = (
    "tools",
    "chat_template",
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
    "add_special_tokens",
)
MAX_COMPARE_BACK = 64  # earlier requests compared with each request (bounds the work to O(n·64))
CHARS_PER_TOKEN = 4.0  # canonical-rendering estimate when /tokenize is unavailable

_VOLATILE = (
    ("timestamp", re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(:\d{2})?|\b\d{1,2}:\d{2}:\d{2}\b|\b1[5-9]\d{8}\b")),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b")),
    ("request id / uuid", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)),
    ("request id / hex", re.compile(r"\b[0-9a-f]{12,}\b", re.I)),
    ("request id", re.compile(r"(?i)\b(req(uest)?|trace|session)[-_ ]?id\b")),
)


# -- input --------------------------------------------------------------------------------------
def load_requests(source: str | Path | Iterable[Mapping[str, Any]], limit: int = 1000) -> tuple[list[dict], list[str]]:
    """Request bodies from a JSONL path (or an iterable of dicts), and notes on skipped lines.

    Accepts plain chat bodies and batch-API lines (``{"custom_id", "body": {...}}``).
    """
    notes: list[str] = []
    bodies: list[dict] = []
    if isinstance(source, str | Path):
        try:
            lines: Iterable[Any] = Path(source).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            return [], [f"requests file not readable: {exc}"]
    else:
        lines = source
    for n, line in enumerate(lines, 1):
        if isinstance(line, str):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                notes.append(f"line {n}: not JSON ({exc})")
                continue
        else:
            item = line
        if isinstance(item, dict) and isinstance(item.get("body"), dict):
            item = item["body"]
        if not isinstance(item, dict) or not isinstance(item.get("messages"), list):
            notes.append(f"line {n}: no messages list (not a chat request)")
            continue
        bodies.append(item)
        if len(bodies) >= limit:
            notes.append(f"stopped at {limit} requests")
            break
    return bodies, notes


# -- structure ------------------------------------------------------------------------------------
def _parts(content: Any) -> list[tuple[str, str]]:
    """(kind, value) parts of a message content: text, or an image as position-free content hash."""
    if content is None:
        return []
    if isinstance(content, str):
        return [("text", content)]
    out: list[tuple[str, str]] = []
    for part in content if isinstance(content, list) else [content]:
        if not isinstance(part, Mapping):
            out.append(("text", str(part)))
            continue
        kind = part.get("type", "")
        if kind in ("text", "input_text"):
            out.append(("text", str(part.get("text", ""))))
        elif "image" in kind or "image_url" in part:
            ref = part.get("image_url") or part.get("image") or part
            url = ref.get("url", "") if isinstance(ref, Mapping) else str(ref)
            out.append(("image", hashlib.sha256(str(url).encode()).hexdigest()[:12]))
        else:
            out.append((kind or "part", json.dumps(part, sort_keys=True)))
    return out


def _tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        fn = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        return str(fn.get("name", ""))
    return str(tool)


def _split(body: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """Leading system/developer messages, and the rest."""
    msgs = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    i = 0
    while i < len(msgs) and msgs[i].get("role") in ("system", "developer"):
        i += 1
    return msgs[:i], msgs[i:]


@dataclass
class FirstDifference(Record):
    """The first component where two requests differ, with the differing snippets."""

    SCHEMA = "prefix_cache_first_difference"
    component: str
    detail: str = ""
    snippet_a: str = ""
    snippet_b: str = ""
    looks_like: str = ""  # timestamp / request id / ... when the differing text matches one

    def __post_init__(self) -> None:
        # Defence in depth: every constructor below already passes redacted text; idempotent.
        self.detail = redact_text(self.detail)
        self.snippet_a = redact_text(self.snippet_a)
        self.snippet_b = redact_text(self.snippet_b)


def first_difference(a: Mapping[str, Any], b: Mapping[str, Any]) -> FirstDifference:
    """Name the first differing component of ``b`` against the earlier request ``a``."""
    if a.get("model") != b.get("model"):
        return FirstDifference(
            MODEL, "model (or LoRA adapter) name differs", _short(a.get("model")), _short(b.get("model"))
        )
    if a.get("cache_salt") != b.get("cache_salt"):
        return FirstDifference(
            SALT,
            "cache_salt differs: salted requests share no block",
            _short(a.get("cache_salt")),
            _short(b.get("cache_salt")),
        )
    for key in TEMPLATE_KEYS:
        if a.get(key) != b.get(key):
            return FirstDifference(TEMPLATE, f"{key} differs", _short(a.get(key)), _short(b.get(key)))
    sys_a, rest_a = _split(a)
    sys_b, rest_b = _split(b)
    for i in range(max(len(sys_a), len(sys_b))):
        ma = sys_a[i] if i < len(sys_a) else None
        mb = sys_b[i] if i < len(sys_b) else None
        diff = _message_diff(ma, mb, SYSTEM, f"system message {i}")
        if diff:
            return diff
    tools = _tools_diff(a.get("tools") or [], b.get("tools") or [])
    if tools:
        return tools
    n = min(len(rest_a), len(rest_b))
    for i in range(n):
        # The last turn of the earlier request is its tail: a later request that changes it varies the tail.
        last = i >= len(rest_a) - 1 or i >= len(rest_b) - 1
        diff = _message_diff(rest_a[i], rest_b[i], TAIL if last else HISTORY, f"message {len(sys_a) + i}")
        if diff:
            return diff
    if len(rest_a) != len(rest_b):
        return FirstDifference(TAIL, f"{abs(len(rest_a) - len(rest_b))} turn(s) appended")
    return FirstDifference(IDENTICAL, "requests render the same")


def _message_diff(
    ma: Mapping[str, Any] | None, mb: Mapping[str, Any] | None, comp: str, where: str
) -> FirstDifference | None:
    if ma is None or mb is None:
        return FirstDifference(comp, f"{where} present in only one request")
    if ma.get("role") != mb.get("role"):
        return FirstDifference(comp, f"{where}: role {ma.get('role')} vs {mb.get('role')}")
    pa, pb = _parts(ma.get("content")), _parts(mb.get("content"))
    for j in range(max(len(pa), len(pb))):
        xa = pa[j] if j < len(pa) else None
        xb = pb[j] if j < len(pb) else None
        if xa == xb:
            continue
        if (xa and xa[0] == "image") or (xb and xb[0] == "image"):
            imgs_a = [v for k, v in pa if k == "image"]
            imgs_b = [v for k, v in pb if k == "image"]
            what = "position" if sorted(imgs_a) == sorted(imgs_b) else "content"
            return FirstDifference(
                IMAGE, f"{where}: image {what} differs (part {j})", xa[1] if xa else "", xb[1] if xb else ""
            )
        ta, tb = (xa[1] if xa else ""), (xb[1] if xb else "")
        snip_a, snip_b, hidden = redacted_snippets(ta, tb)
        # The kind is read from the raw run (a label only, no text kept): "session_id=…" is redacted
        # as a secret, yet is exactly the per-request id this analysis should name.
        return FirstDifference(
            comp,
            f"{where}: text differs at character {_common_chars(ta, tb)}{hidden}",
            snip_a,
            snip_b,
            volatile_kind(*text_snippets(ta, tb)),
        )
    for key in ("name", "tool_calls", "tool_call_id"):
        if ma.get(key) != mb.get(key):
            return FirstDifference(comp, f"{where}: {key} differs", _short(ma.get(key)), _short(mb.get(key)))
    return None


def _tools_diff(ta: Sequence[Any], tb: Sequence[Any]) -> FirstDifference | None:
    if list(ta) == list(tb):
        return None
    names_a, names_b = [_tool_name(t) for t in ta], [_tool_name(t) for t in tb]
    by_a = {_tool_name(t): json.dumps(t, sort_keys=True) for t in ta}
    by_b = {_tool_name(t): json.dumps(t, sort_keys=True) for t in tb}
    if names_a != names_b and by_a == by_b:
        return FirstDifference(
            TOOLS,
            "tool definitions are the same but in another order",
            _short(", ".join(names_a)),
            _short(", ".join(names_b)),
        )
    if set(names_a) != set(names_b):
        return FirstDifference(TOOLS, "different tool sets", _short(", ".join(names_a)), _short(", ".join(names_b)))
    for i, (x, y) in enumerate(zip(ta, tb, strict=False)):
        if x != y:
            sx, sy = json.dumps(x, sort_keys=False), json.dumps(y, sort_keys=False)
            if json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True):
                detail = f"tool {_tool_name(x)}: same content, keys in another order (renders differently)"
            else:
                detail = f"tool {_tool_name(x)}: definition content differs"
            a, b, hidden = redacted_snippets(sx, sy)
            return FirstDifference(
                TOOLS, (detail if names_a[: i + 1] == names_b[: i + 1] else "tool order differs") + hidden, a, b
            )
    return FirstDifference(TOOLS, "tool definitions differ", _short(", ".join(names_a)), _short(", ".join(names_b)))


def _common_chars(a: str, b: str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def text_snippets(a: str, b: str, context: int = 40) -> tuple[str, str]:
    """The two texts around their first differing character, with ``⟦…⟧`` around the differing run."""
    i = _common_chars(a, b)
    # extend the differing run to the end of the differing word-ish run on each side
    ja = _run_end(a, b, i)
    jb = _run_end(b, a, i)
    start = max(0, i - context)

    def show(s: str, j: int) -> str:
        pre = ("…" if start else "") + s[start:i]
        return f"{pre}⟦{s[i:j]}⟧{s[j : j + context]}" + ("…" if j + context < len(s) else "")

    return show(a, ja), show(b, jb)


def redacted_snippets(a: str, b: str) -> tuple[str, str, str]:
    """``text_snippets`` of the redacted texts, and a note when the texts differ only inside a secret."""
    ra, rb = redact_text(a), redact_text(b)
    if ra == rb:  # the only difference is inside a redacted value: nothing of it may be shown
        return "", "", " (inside a value redacted as a secret)"
    snip_a, snip_b = text_snippets(ra, rb)
    return redact_text(snip_a), redact_text(snip_b), ""


def _run_end(s: str, other: str, i: int) -> int:
    """End of the differing run in ``s`` starting at ``i``: up to where both texts resync (suffix match)."""
    k = 0
    while k < min(len(s), len(other)) - i and s[len(s) - 1 - k] == other[len(other) - 1 - k]:
        k += 1
    return max(i, min(len(s) - k, i + 80))


def volatile_kind(*texts: str) -> str:
    """'timestamp', 'request id / uuid', ... when the differing run (between ``⟦⟧``) is part of one."""
    for text in texts:
        m = re.search(r"⟦(.*?)⟧", text, re.S)
        plain = text.replace("⟦", "").replace("⟧", "")
        lo, hi = (m.start(), m.start() + len(m.group(1))) if m else (0, len(plain))
        for kind, rx in _VOLATILE:
            # a differing digit inside "10:00:01" still makes the whole match a timestamp
            if any(hit.start() <= max(hi, lo + 1) and hit.end() >= lo for hit in rx.finditer(plain)):
                return kind
    return ""


def _short(v: Any, n: int = 120) -> str:
    """A value as short, redacted text (redacted before it is cut, so no token fragment survives)."""
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    s = redact_text(s)
    return s if len(s) <= n else s[:n] + "…"


# -- rendering and token counts -------------------------------------------------------------------------
def canonical_rendering(body: Mapping[str, Any]) -> str:
    """A deterministic text in template order, for when /tokenize is not offered."""
    out = [f"<model:{body.get('model')}>"]
    if body.get("cache_salt") is not None:
        out.append(f"<salt:{body.get('cache_salt')}>")
    for key in TEMPLATE_KEYS:
        if body.get(key) is not None:
            out.append(f"<{key}:{json.dumps(body[key], sort_keys=True)}>")
    sys_msgs, rest = _split(body)
    for m in sys_msgs:
        out.append(
            f"<|{m.get('role')}|>" + "".join(v if k == "text" else f"<{k}:{v}>" for k, v in _parts(m.get("content")))
        )
    for t in body.get("tools") or []:
        out.append("<tool>" + json.dumps(t))
    for m in rest:
        out.append(
            f"<|{m.get('role')}|>" + "".join(v if k == "text" else f"<{k}:{v}>" for k, v in _parts(m.get("content")))
        )
        if m.get("tool_calls"):
            out.append(json.dumps(m["tool_calls"]))
    return "\n".join(out)


def tokenize_request(client: EndpointClient, body: Mapping[str, Any]) -> tuple[list[int] | None, str]:
    """A request's prompt tokens through the server's /tokenize, or None."""
    extra = {k: body[k] for k in TOKENIZE_KEYS if body.get(k) is not None}
    return client.token_ids(body.get("messages") or [], **extra)


# -- the report -----------------------------------------------------------------------------------------
@dataclass
class RequestComparison(Record):
    """Two consecutive requests compared: shared prefix length and the first difference."""

    SCHEMA = "prefix_cache_request_comparison"
    index: int
    compared_with: int | None
    shared_tokens: int
    prompt_tokens: int
    cacheable_tokens: int
    first_difference: FirstDifference


@dataclass
class MismatchReport(Record):
    """Shared-prefix lengths per request, what differs first, and the dominant cause."""

    SCHEMA = "prefix_cache_mismatch"
    ok: bool = True
    reason: str = ""
    n_requests: int = 0
    method: str = ""  # "tokenize" | "canonical (chars/4 estimate)"
    unit_tokens: int = 16
    unit_assumed: bool = False  # the server reported no block size: ``unit_tokens`` is a placeholder
    comparisons: list[RequestComparison] = field(default_factory=list)
    component_counts: dict[str, int] = field(default_factory=dict)
    #: first difference against the immediately preceding request: shows components that change
    #: often even when an older request with the same variant is still there to hit.
    adjacent_counts: dict[str, int] = field(default_factory=dict)
    cause: str = ""  # dominant non-tail component, "" when none
    cause_share: float = 0.0
    example: FirstDifference | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def shared_lengths(self) -> list[int]:
        """Shared-prefix length of every comparison."""
        return [c.shared_tokens for c in self.comparisons if c.compared_with is not None]

    def median_shared(self) -> float | None:
        """Median shared-prefix length."""
        vals = self.shared_lengths
        return statistics.median(vals) if vals else None

    def share_hitting(self) -> float | None:
        """Share of comparisons whose shared prefix reaches at least one hit unit."""
        vals = self.shared_lengths
        return sum(v >= self.unit_tokens for v in vals) / len(vals) if vals else None

    def figures(self) -> dict[str, Any]:
        """Everything the distribution figure plots, per-request list included (scraps, artefact)."""
        return {**self.headline_figures(), "shared_prefix_tokens": self.shared_lengths}

    def headline_figures(self) -> dict[str, Any]:
        """Key figures only, bounded whatever the number of requests (for the headline / run.json)."""
        vals = self.shared_lengths
        return {
            "requests": self.n_requests,
            "method": self.method,
            "unit_tokens": self.unit_tokens,
            "unit_assumed": self.unit_assumed,
            "median_shared_tokens": self.median_shared(),
            "min_shared_tokens": min(vals) if vals else None,
            "share_reaching_one_unit": None if self.unit_assumed else self.share_hitting(),
            "first_difference_counts": self.component_counts,
            "vs_previous_counts": self.adjacent_counts,
            "cause": self.cause or None,
            "cause_share": round(self.cause_share, 4) if self.cause else None,
        }

    def figure(self) -> Any:
        """Distribution of shared-prefix lengths against the hit unit (a figure that displays itself)."""
        from ..display import FigureView
        from .figures import shared_prefix_figure

        return FigureView(shared_prefix_figure(self))

    def _repr_html_(self) -> str:
        if not self.ok:
            return banner("Prefix mismatch analysis: not run", self.reason, "unknown")
        if self.cause:
            title = f"Requests stop sharing at: {self.cause} ({self.cause_share:.0%} of requests)"
            tone = "bad"
        else:
            title, tone = "Requests share their prefix up to the tail", "good"
        unit = (
            f"block size not reported, {self.unit_tokens} only a placeholder"
            if self.unit_assumed
            else f"unit {self.unit_tokens}"
        )
        detail = (
            f"{self.n_requests} requests, {self.method}; median shared prefix {self.median_shared()} tokens ({unit})"
        )
        ex = ""
        if self.example:
            e = self.example
            ex = (
                f"<p><b>First difference:</b> {esc(e.component)} — {esc(e.detail)}"
                + (f" <b>(looks like a {esc(e.looks_like)})</b>" if e.looks_like else "")
                + f"</p><pre>earlier: {esc(e.snippet_a)}\nlater:   {esc(e.snippet_b)}</pre>"
            )
        rows = [
            {
                "request": c.index,
                "vs": c.compared_with,
                "shared_tokens": c.shared_tokens,
                "cacheable": c.cacheable_tokens,
                "prompt_tokens": c.prompt_tokens,
                "first_difference": c.first_difference.component,
                "detail": c.first_difference.detail,
            }
            for c in self.comparisons
        ]
        notes = "".join(f"<li>{esc(n)}</li>" for n in self.notes)
        return banner(title, detail, tone) + ex + html_table(rows) + (f"<ul>{notes}</ul>" if notes else "")


def analyse_requests(
    bodies: Sequence[Mapping[str, Any]],
    *,
    client: EndpointClient | None = None,
    unit_tokens: int = 16,
    unit_assumed: bool = False,
    max_requests: int = 200,
    notes: Sequence[str] = (),
) -> MismatchReport:
    """Compare every request with the earlier one it shares most with. Never raises."""
    report = MismatchReport(unit_tokens=unit_tokens, unit_assumed=unit_assumed, notes=[redact_text(n) for n in notes])
    bodies = list(bodies)[:max_requests]
    if len(bodies) > max_requests:
        report.notes.append(f"analysed the first {max_requests} requests")
    report.n_requests = len(bodies)
    if len(bodies) < 2:
        report.ok, report.reason = False, f"need at least 2 requests to compare, got {len(bodies)}"
        return report

    seqs: list[Sequence[Any]] | None = None
    if client is not None:
        toks: list[Sequence[Any]] = []
        for i, b in enumerate(bodies):
            ids, why = tokenize_request(client, b)
            if ids is None:
                report.notes.append(
                    redact_text(f"/tokenize failed for request {i} ({why}); using the canonical rendering")
                )
                break
            toks.append(ids)
        else:
            seqs, report.method = toks, "tokenize"
    if seqs is None:
        seqs = [canonical_rendering(b) for b in bodies]
        report.method = f"canonical (chars/{CHARS_PER_TOKEN:g} estimate)"
    scale = 1.0 if report.method == "tokenize" else 1.0 / CHARS_PER_TOKEN

    counts: Counter[str] = Counter()
    adjacent: Counter[str] = Counter()
    examples: dict[str, FirstDifference] = {}
    for i, body in enumerate(bodies):
        length = int(len(seqs[i]) * scale)
        if i == 0:
            report.comparisons.append(RequestComparison(0, None, 0, length, 0, FirstDifference(FIRST, "cold")))
            continue
        best_j, best = i - 1, -1
        for j in range(i - 1, max(-1, i - 1 - MAX_COMPARE_BACK), -1):
            n = common_prefix_len(seqs[i], seqs[j])
            if n > best:
                best_j, best = j, n
        shared = int(best * scale)
        diff = first_difference(bodies[best_j], body)
        cacheable = (min(shared, max(0, length - 1)) // unit_tokens) * unit_tokens
        report.comparisons.append(RequestComparison(i, best_j, shared, length, cacheable, diff))
        counts[diff.component] += 1
        adjacent[(diff if best_j == i - 1 else first_difference(bodies[i - 1], body)).component] += 1
        examples.setdefault(diff.component, diff)
    report.component_counts = dict(counts)
    report.adjacent_counts = dict(adjacent)
    mismatches = {k: v for k, v in counts.items() if k not in NOT_A_MISMATCH}
    if mismatches:
        cause, n = max(mismatches.items(), key=lambda kv: (kv[1], -COMPONENTS.index(kv[0])))
        report.cause_share = n / max(1, sum(counts.values()))
        report.cause = cause
        report.example = examples[cause]
    else:
        report.example = examples.get(TAIL) or examples.get(IDENTICAL)
    return report


def analyse_jsonl(
    path: str | Path,
    *,
    client: EndpointClient | None = None,
    unit_tokens: int = 16,
    unit_assumed: bool = False,
    max_requests: int = 200,
) -> MismatchReport:
    """Read real request bodies from JSONL (bounded) and find where they stop sharing a prefix."""
    bodies, notes = load_requests(path, limit=max_requests)
    report = analyse_requests(
        bodies,
        client=client,
        unit_tokens=unit_tokens,
        unit_assumed=unit_assumed,
        max_requests=max_requests,
        notes=notes,
    )
    if not bodies:
        report.ok, report.reason = False, redact_text("; ".join(notes) or f"no chat requests in {path}")
    return report
