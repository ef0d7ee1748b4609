"""vLLM Prometheus ``/metrics`` read by metric family, across vLLM's renames.

Why by family and with aliases: vLLM renamed several metrics between releases
(``gpu_cache_usage_perc`` → ``kv_cache_usage_perc`` in 0.9, ``gpu_prefix_cache_*`` →
``prefix_cache_*`` in 0.9, ``time_per_output_token_seconds`` → ``inter_token_latency_seconds``
in 0.11). A runbook asks for the new name and gets whichever the server exposes, and the result
says which wire name it came from, so a report can flag an old server. ``cache_config_info``'s
labels are the running CacheConfig's attributes and vary by version, so they are an open dict.

Stdlib only, no prometheus_client: the text format is simple and the parser must tolerate a
line it does not understand (counted in ``parse_errors``) instead of failing the whole scrape.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .display import html_table
from .records import Record, utc_now

#: new canonical family name -> older wire names, newest first.
ALIASES: dict[str, tuple[str, ...]] = {
    "vllm:kv_cache_usage_perc": ("vllm:gpu_cache_usage_perc",),
    "vllm:prefix_cache_queries": ("vllm:gpu_prefix_cache_queries",),
    "vllm:prefix_cache_hits": ("vllm:gpu_prefix_cache_hits",),
    "vllm:inter_token_latency_seconds": ("vllm:time_per_output_token_seconds",),
}
_OLD_TO_NEW = {old: new for new, olds in ALIASES.items() for old in olds}

_SAMPLE_SUFFIXES = ("_total", "_created", "_bucket", "_count", "_sum", "_gcount", "_gsum", "_info")
_NAME_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)")
_LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


@dataclass
class Sample(Record):
    """One series line: wire name (with suffix), labels, value."""

    SCHEMA = "metric_sample"
    name: str
    labels: dict[str, str]
    value: float


@dataclass
class Family(Record):
    """All samples of one metric family as exposed (``name`` is the declared family name)."""

    SCHEMA = "metric_family"
    name: str
    type: str = "untyped"
    help: str = ""
    samples: list[Sample] = field(default_factory=list)

    def series(self, suffix: str | None = None, **labels: str) -> list[Sample]:
        """Samples whose name ends with ``suffix`` (None = the main value) and whose labels match."""
        want = self._main_name() if suffix is None else self.name + suffix
        return [s for s in self.samples if s.name == want and _labels_match(s.labels, labels)]

    def _main_name(self) -> str:
        if self.type == "counter":
            return self.name + "_total" if any(s.name == self.name + "_total" for s in self.samples) else self.name
        if self.type in ("histogram", "summary"):
            return self.name + "_count"
        return self.name

    def total(self, **labels: str) -> float | None:
        """Sum over matching series of the family's main value (counter total, gauge, histogram count)."""
        rows = self.series(**labels)
        return math.fsum(s.value for s in rows) if rows else None

    def per_engine(self, suffix: str | None = None, **labels: str) -> dict[str, float]:
        """Value per ``engine`` label (data-parallel engine index), summed over other labels."""
        out: dict[str, float] = {}
        for s in self.series(suffix, **labels):
            key = s.labels.get("engine", "")
            out[key] = out.get(key, 0.0) + s.value
        return out


@dataclass
class Histogram(Record):
    """A histogram summed over matching series: cumulative buckets by upper bound, count and sum."""

    SCHEMA = "metric_histogram"
    name: str
    count: float
    sum: float
    buckets: dict[str, float]

    @property
    def mean(self) -> float | None:
        """Mean of the observed values, None with no observations."""
        return self.sum / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        """Upper bound of the first bucket whose cumulative count reaches q·count (coarse, honest)."""
        if not self.count:
            return None
        target = q * self.count
        for bound, cum in sorted(self.buckets.items(), key=lambda kv: _le(kv[0])):
            if cum >= target:
                return _le(bound)
        return math.inf


@dataclass
class MetricsSnapshot(Record):
    """One scrape of ``/metrics``, parsed into families keyed by their declared name."""

    SCHEMA = "metrics_snapshot"
    families: dict[str, Family] = field(default_factory=dict)
    taken_at: str = ""
    monotonic_s: float = 0.0
    parse_errors: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetricsSnapshot:
        """Rebuild a snapshot saved as JSON (to compute deltas from a recorded run)."""
        fams = {}
        for name, fd in (data.get("families") or {}).items():
            samples = [Sample(s["name"], dict(s.get("labels") or {}), float(s["value"])) for s in fd.get("samples", [])]
            fams[name] = Family(fd.get("name", name), fd.get("type", "untyped"), fd.get("help", ""), samples)
        return cls(
            fams,
            data.get("taken_at", ""),
            float(data.get("monotonic_s", 0.0)),
            list(data.get("parse_errors") or []),
        )

    # -- lookup ------------------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        """The family name present on the wire for ``name`` (new or old spelling, ``_total`` or not)."""
        return next((c for c in spellings(name) if c in self.families), None)

    def family(self, name: str) -> Family | None:
        """The family for ``name`` under any accepted spelling, or None when the server lacks it."""
        wire = self.resolve(name)
        return self.families.get(wire) if wire else None

    def value(self, name: str, **labels: str) -> float | None:
        """Sum over engines (and other labels unless given) of a counter/gauge; None when absent."""
        fam = self.family(name)
        return fam.total(**labels) if fam else None

    def per_engine(self, name: str, **labels: str) -> dict[str, float]:
        """One value per data-parallel engine: each has its own cache and counters."""
        fam = self.family(name)
        return fam.per_engine(**labels) if fam else {}

    def histogram(self, name: str, **labels: str) -> Histogram | None:
        """Histogram summed over matching series (all engines unless ``engine=`` is given)."""
        fam = self.family(name)
        if fam is None:
            return None
        buckets: dict[str, float] = {}
        for s in fam.series("_bucket", **{k: v for k, v in labels.items() if k != "le"}):
            le = s.labels.get("le", "+Inf")
            buckets[le] = buckets.get(le, 0.0) + s.value
        count = math.fsum(s.value for s in fam.series("_count", **labels))
        total = math.fsum(s.value for s in fam.series("_sum", **labels))
        return Histogram(fam.name, count, total, buckets)

    def info_labels(self, name: str = "vllm:cache_config_info") -> list[dict[str, str]]:
        """Label sets of an ``*_info`` gauge, one dict per series (per engine); keys are open."""
        fam = self.family(name)
        if fam is None:
            return []
        return [dict(s.labels) for s in fam.samples if not s.name.endswith("_created")]

    def cache_config(self, engine: str | None = None) -> dict[str, str]:
        """``vllm:cache_config_info`` labels for one engine (default: the first), as an open dict."""
        rows = self.info_labels("vllm:cache_config_info")
        if engine is not None:
            rows = [r for r in rows if r.get("engine") == engine]
        return rows[0] if rows else {}

    def renamed(self) -> dict[str, str]:
        """Old wire names in use, mapped to the new name a current vLLM would expose."""
        return {old: new for old, new in _OLD_TO_NEW.items() if old in self.families and new not in self.families}

    def names(self) -> list[str]:
        """Every metric family name in the snapshot, sorted."""
        return sorted(self.families)


@dataclass
class MetricsDelta(Record):
    """Counter and histogram count/sum changes between two snapshots (summed over engines).

    ``resets`` lists families whose value went down (server restarted between scrapes): their
    delta is not meaningful and is reported as None.
    """

    SCHEMA = "metrics_delta"
    interval_s: float
    deltas: dict[str, float | None] = field(default_factory=dict)
    resets: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        rows = [{"metric": k, "delta": v, "reset": k in self.resets} for k, v in self.deltas.items()]
        return f"<p>over {self.interval_s:.2f} s</p>" + html_table(rows)

    def get(self, name: str) -> float | None:
        """Delta for ``name`` under any accepted spelling (``<name>_count`` / ``_sum`` for histograms)."""
        return next((self.deltas[c] for c in spellings(name) if c in self.deltas), None)


def diff(
    before: MetricsSnapshot, after: MetricsSnapshot, names: Iterable[str] | None = None, **labels: str
) -> MetricsDelta:
    """Per-run deltas for counters (and histogram counts/sums as ``<name>_count`` / ``<name>_sum``).

    Keys use the canonical (new) family name, so an old server's ``gpu_prefix_cache_hits``
    shows up as ``vllm:prefix_cache_hits``.
    """
    wanted = (
        list(names)
        if names is not None
        else sorted({_OLD_TO_NEW.get(n, n) for n, f in after.families.items() if f.type in ("counter", "histogram")})
    )
    out = MetricsDelta(interval_s=max(0.0, after.monotonic_s - before.monotonic_s))
    for name in wanted:
        fa, fb = after.family(name), before.family(name)
        key = _OLD_TO_NEW.get(fa.name, fa.name) if fa else _OLD_TO_NEW.get(_family_name(name), _family_name(name))
        if fa is None:
            out.deltas[key] = None
            continue
        pairs: list[tuple[str, str | None]]
        if fa.type == "histogram":
            pairs = [(key + "_count", "_count"), (key + "_sum", "_sum")]
        else:
            pairs = [(key, None)]
        for out_key, suffix in pairs:
            a = math.fsum(s.value for s in fa.series(suffix, **labels))
            b = math.fsum(s.value for s in fb.series(suffix, **labels)) if fb else 0.0
            if a < b:
                out.resets.append(out_key)
                out.deltas[out_key] = None
            else:
                out.deltas[out_key] = a - b
    return out


# -- parsing ---------------------------------------------------------------------------------
def parse_metrics(text: str, monotonic_s: float | None = None) -> MetricsSnapshot:
    """Parse Prometheus text exposition; unknown or broken lines are recorded, not fatal."""
    snap = MetricsSnapshot(taken_at=utc_now(), monotonic_s=time.monotonic() if monotonic_s is None else monotonic_s)
    declared: dict[str, Family] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                fam = declared.setdefault(parts[2], Family(parts[2]))
                snap.families.setdefault(parts[2], fam)
                if parts[1] == "TYPE":
                    fam.type = parts[3].strip() if len(parts) > 3 else "untyped"
                else:
                    fam.help = parts[3] if len(parts) > 3 else ""
            continue
        parsed = _parse_sample(line)
        if parsed is None:
            snap.parse_errors.append(f"line {lineno}: {raw[:200]}")
            continue
        fam_name = _owner(parsed.name, declared)
        fam = declared.get(fam_name)
        if fam is None:
            fam = declared[fam_name] = Family(fam_name)
            snap.families[fam_name] = fam
        fam.samples.append(parsed)
    _normalise(snap)
    return snap


def _normalise(snap: MetricsSnapshot) -> None:
    """Key counters by their declared name (prometheus_client writes ``# TYPE x_total counter``)
    and fold the separate ``x_created`` gauge families back into ``x``."""
    for name in list(snap.families):
        fam = snap.families[name]
        if fam.type == "counter" and name.endswith("_total") and name[:-6] not in snap.families:
            fam.name = name[:-6]
            snap.families[fam.name] = snap.families.pop(name)
    for name in list(snap.families):
        if name.endswith("_created") and name[:-8] in snap.families:
            snap.families[name[:-8]].samples.extend(snap.families.pop(name).samples)


def _parse_sample(line: str) -> Sample | None:
    m = _NAME_RE.match(line)
    if not m:
        return None
    name, rest = m.group(1), line[m.end() :]
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        end = _closing_brace(rest)
        if end < 0:
            return None
        body = rest[1:end]
        pos = 0
        while pos < len(body):
            lm = _LABEL_RE.match(body, pos)
            if not lm:
                if body[pos:].strip(" ,"):
                    return None
                break
            labels[lm.group(1)] = _unescape(lm.group(2))
            pos = lm.end()
        rest = rest[end + 1 :]
    fields = rest.split()
    if not fields:
        return None
    try:
        value = float(fields[0])  # accepts NaN, +Inf, -Inf
    except ValueError:
        return None
    return Sample(name, labels, value)


def _closing_brace(text: str) -> int:
    in_str = False
    i = 0
    while i < len(text):
        c = text[i]
        if in_str and c == "\\":
            i += 2
            continue
        if c == '"':
            in_str = not in_str
        elif c == "}" and not in_str:
            return i
        i += 1
    return -1


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "\\": "\\", '"': '"'}.get(m.group(1), m.group(0)), value)


def _owner(sample_name: str, declared: Mapping[str, Family]) -> str:
    """The declared family a sample belongs to (``x_total`` → ``x`` when ``x`` is declared)."""
    if sample_name in declared:
        return sample_name
    for suffix in _SAMPLE_SUFFIXES:
        if sample_name.endswith(suffix) and sample_name[: -len(suffix)] in declared:
            return sample_name[: -len(suffix)]
    return sample_name


def _family_name(name: str) -> str:
    for suffix in ("_total",):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def spellings(name: str) -> list[str]:
    """Candidate wire family names for ``name``, first present wins: the current name, then its
    older aliases, with and without ``_total`` and the ``vllm:`` prefix."""
    bases = [name] if ":" in name else [name, "vllm:" + name]
    out: list[str] = []
    for base in bases:
        for cand in (base, base[:-6] if base.endswith("_total") else None):
            if cand is None:
                continue
            new = _OLD_TO_NEW.get(cand, cand)
            for c in (new, *ALIASES.get(new, ()), cand):
                for spelled in (c, c + "_total"):  # untyped counters keep their _total name
                    if spelled not in out:
                        out.append(spelled)
    return out


def _labels_match(have: Mapping[str, str], want: Mapping[str, str]) -> bool:
    return all(have.get(k) == str(v) for k, v in want.items())


def _le(bound: str) -> float:
    try:
        return float(bound)
    except ValueError:
        return math.inf


__all__ = [
    "ALIASES",
    "Family",
    "Histogram",
    "MetricsDelta",
    "MetricsSnapshot",
    "Sample",
    "diff",
    "parse_metrics",
]
