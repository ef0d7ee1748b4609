"""Log signatures as data: loading and validating ``data/log_signatures.yaml``.

Signatures live in YAML so that a new failure mode is one reviewed data entry, not a code
change. Loading validates what the classifier relies on (known labels and stages, patterns that
compile, no anchors) so a bad entry fails at load time with its id, not mid-incident.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

#: Fixed label vocabulary (same as the labelled corpus).
LABELS: tuple[str, ...] = (
    "driver_too_old",
    "forward_compat_unsupported",
    "container_toolkit_requirement",
    "libcuda_missing",
    "no_gpu_visible",
    "nvml_mismatch",
    "arch_unsupported",
    "oom_weights",
    "oom_runtime",
    "kv_cache_insufficient",
    "nccl_error",
    "shm_insufficient",
    "abi_or_wheel_mismatch",
    "tool_call_parse_error",
    "other_config_error",
    "healthy",
    "unrecognized_error",
    "inconclusive",
)
#: Label when the log proves neither a failure nor a server that came up (also: empty or
#: unreadable logs). Kept under its old constant name for callers.
INCONCLUSIVE = "inconclusive"
UNKNOWN = INCONCLUSIVE
#: What positive ``info`` evidence proves: the server answers (``serving``), the engine finished
#: the GPU stages of start-up (``started``: ``healthy`` at most ``likely``), or start-up got as far
#: as a step before that (``progress``: never ``healthy``).
PROOFS: tuple[str, ...] = ("serving", "started", "progress")

SEVERITIES: tuple[str, ...] = ("critical", "error", "warning", "info")
#: Severities that can decide a log's label (``info`` is positive evidence only).
DECISIVE = frozenset({"critical", "error", "warning"})

_FORBIDDEN = re.compile(r"\\[1-9]|\(\?[=!<]|\(\?[a-zA-Z]|\\d|\\D|(?<![\\\[])\^|(?<!\\)\$")


class SignatureError(ValueError):
    """A signature file entry is invalid (the message names the entry)."""


@dataclass(frozen=True)
class Refinement:
    """Relabel a finding when a context marker is the nearest one in its window.

    ``advice`` replaces the signature's when the new label needs another fix (error 35 in a container
    given no driver is a missing ``--gpus``, not an old driver); empty keeps the signature's.
    """

    context: str
    label: str
    stage: str
    advice: str = ""


@dataclass(frozen=True)
class Signature:
    id: str
    label: str
    stage: str
    severity: str
    priority: int
    patterns: tuple[str, ...]
    advice: str
    source: str = ""
    refine: tuple[Refinement, ...] = ()
    window_before: int = 40
    window_after: int = 10
    ignore_levels: frozenset[str] = frozenset()
    proves: str | None = None
    codes: bool = False
    #: Cheaper patterns that match at least every line ``patterns`` match (a superset); the
    #: fast prefilter uses them, the exact ``patterns`` still decide each candidate line.
    prefilter: tuple[str, ...] = ()

    @property
    def decisive(self) -> bool:
        return self.severity in DECISIVE


@dataclass(frozen=True)
class ContextMarker:
    """A line that tells where in start-up we are; never decides a label by itself.

    ``phase`` markers (start-up phases) also refine a finding from anywhere before it when none is in
    its window ("the last phase entered"); a fact marker (``phase: false``: a banner, a mismatch) only
    refines within the window, so it cannot reach across a restart in a concatenated log.
    """

    id: str
    stage: str
    patterns: tuple[str, ...]
    phase: bool = True


@dataclass(frozen=True)
class SignatureSet:
    signatures: tuple[Signature, ...]
    contexts: tuple[ContextMarker, ...] = ()
    stages: dict[str, str] = field(default_factory=dict)
    schema_version: int = 1
    origin: str = ""
    #: Failure-looking wording of any program (``scorer_lines`` in the YAML): lines that match
    #: are handed to the learned scorer (``logs/scorer.py``); they decide nothing by themselves.
    scorer_patterns: tuple[str, ...] = ()

    def by_id(self, sig_id: str) -> Signature:
        for sig in self.signatures:
            if sig.id == sig_id:
                return sig
        raise KeyError(sig_id)

    @property
    def phase_contexts(self) -> frozenset[str]:
        """Ids of the phase markers: those that refine from anywhere before a finding."""
        return frozenset(c.id for c in self.contexts if c.phase)

    def all_patterns(self) -> list[str]:
        """Every pattern (signatures then contexts), e.g. for ``grep -E -f``."""
        out = [p for s in self.signatures for p in s.patterns]
        out += [p for c in self.contexts for p in c.patterns]
        out += list(self.scorer_patterns)
        return out


def check_pattern(pattern: str) -> None:
    """Raise if a pattern uses syntax that RE2 / grep -E / Python re would read differently."""
    if _FORBIDDEN.search(pattern):
        raise SignatureError(f"pattern {pattern!r} uses a backreference, lookaround, inline flag, \\d or an anchor")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise SignatureError(f"pattern {pattern!r} does not compile: {exc}") from exc
    try:
        import re2  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - re2 is a dependency; fallback still validated by re
        return
    try:
        re2.compile(pattern)
    except re2.error as exc:
        raise SignatureError(f"pattern {pattern!r} is not RE2-compatible: {exc}") from exc


def _as_patterns(entry: dict[str, Any], where: str) -> tuple[str, ...]:
    pats = entry.get("patterns")
    if not isinstance(pats, list) or not pats or not all(isinstance(p, str) and p for p in pats):
        raise SignatureError(f"{where}: 'patterns' must be a non-empty list of strings")
    for p in pats:
        try:
            check_pattern(p)
        except SignatureError as exc:
            raise SignatureError(f"{where}: {exc}") from None
    return tuple(pats)


def parse_signatures(data: dict[str, Any], origin: str = "") -> SignatureSet:
    """Validate a loaded YAML mapping and build a :class:`SignatureSet`."""
    if not isinstance(data, dict):
        raise SignatureError(f"{origin}: top level must be a mapping")
    stages = data.get("stages") or {}
    if not isinstance(stages, dict) or not stages:
        raise SignatureError(f"{origin}: 'stages' must be a mapping of stage -> description")
    contexts: list[ContextMarker] = []
    for i, c in enumerate(data.get("contexts") or []):
        where = f"{origin} contexts[{i}] {c.get('id', '?') if isinstance(c, dict) else '?'}"
        if not isinstance(c, dict) or not c.get("id"):
            raise SignatureError(f"{where}: needs an id")
        if c.get("stage") not in stages:
            raise SignatureError(f"{where}: unknown stage {c.get('stage')!r}")
        phase = c.get("phase", True)
        if not isinstance(phase, bool):
            raise SignatureError(f"{where}: phase must be true or false")
        contexts.append(ContextMarker(str(c["id"]), str(c["stage"]), _as_patterns(c, where), phase))
    context_ids = {c.id for c in contexts}

    sigs: list[Signature] = []
    seen: set[str] = set()
    for i, s in enumerate(data.get("signatures") or []):
        where = f"{origin} signatures[{i}] {s.get('id', '?') if isinstance(s, dict) else '?'}"
        if not isinstance(s, dict) or not s.get("id"):
            raise SignatureError(f"{where}: needs an id")
        if s["id"] in seen:
            raise SignatureError(f"{where}: duplicate id")
        seen.add(s["id"])
        if s.get("label") not in LABELS:
            raise SignatureError(f"{where}: label {s.get('label')!r} not in the label vocabulary")
        if s.get("stage") not in stages:
            raise SignatureError(f"{where}: unknown stage {s.get('stage')!r}")
        if s.get("severity") not in SEVERITIES:
            raise SignatureError(f"{where}: severity must be one of {SEVERITIES}")
        if not isinstance(s.get("priority"), int):
            raise SignatureError(f"{where}: priority must be an integer")
        if not str(s.get("advice") or "").strip():
            raise SignatureError(f"{where}: advice is required")
        proves = s.get("proves")
        if proves is not None and (proves not in PROOFS or s["severity"] != "info"):
            raise SignatureError(f"{where}: proves must be one of {PROOFS}, on an info signature")
        refine = []
        for r in s.get("refine") or []:
            if r.get("context") not in context_ids or r.get("label") not in LABELS:
                raise SignatureError(f"{where}: refine entry {r!r} names an unknown context or label")
            advice = " ".join(str(r.get("advice") or "").split())
            refine.append(Refinement(r["context"], r["label"], r.get("stage", s["stage"]), advice))
        sigs.append(
            Signature(
                id=str(s["id"]),
                label=s["label"],
                stage=s["stage"],
                severity=s["severity"],
                priority=int(s["priority"]),
                patterns=_as_patterns(s, where),
                advice=" ".join(str(s["advice"]).split()),
                source=str(s.get("source") or ""),
                refine=tuple(refine),
                window_before=int(s.get("window_before", 40)),
                window_after=int(s.get("window_after", 10)),
                ignore_levels=frozenset(str(x).upper() for x in s.get("ignore_levels") or ()),
                proves=proves,
                codes=bool(s.get("codes", False)),
                prefilter=_as_patterns({"patterns": s["prefilter"]}, where + " prefilter")
                if s.get("prefilter")
                else (),
            )
        )
    if not sigs:
        raise SignatureError(f"{origin}: no signatures")
    scorer = data.get("scorer_lines") or {}
    if not isinstance(scorer, dict):
        raise SignatureError(f"{origin}: 'scorer_lines' must be a mapping with 'patterns'")
    scorer_patterns = _as_patterns(scorer, f"{origin} scorer_lines") if scorer else ()
    return SignatureSet(
        tuple(sigs),
        tuple(contexts),
        dict(stages),
        int(data.get("schema_version", 1)),
        origin,
        scorer_patterns,
    )


def load_signatures(path: str | Path | None = None) -> SignatureSet:
    """Load the packaged signatures, or another file (e.g. a site-local extension)."""
    if path is None:
        return _default_signatures()
    from ..bounded import load_yaml

    p = Path(path)
    return parse_signatures(load_yaml(p), str(p))


def default_signatures_bytes() -> bytes:
    """The packaged signature file's bytes (its hash keys the compiled-database cache)."""
    return (resources.files("vllm_runbooks") / "data" / "log_signatures.yaml").read_bytes()


@lru_cache(maxsize=1)
def _default_signatures() -> SignatureSet:
    import yaml

    return parse_signatures(yaml.safe_load(default_signatures_bytes().decode("utf-8")), "log_signatures.yaml")
