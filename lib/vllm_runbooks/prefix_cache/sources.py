"""Is prefix caching on? Read every source that can say so and show whether they agree.

Why several sources: the launch command is what someone *meant*, the startup log is what vLLM
*parsed*, ``vllm:cache_config_info`` is what the *running* engine uses, and the model profile
says what happens when nobody asked. A wrapper script that drops a flag, or a server restarted
with other flags, shows up as disagreement between them.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..display import banner, html_table
from ..records import Record

ON, OFF, NOT_SET, UNAVAILABLE = "on", "off", "not set", "unavailable"

_NON_DEFAULT_RE = re.compile(r"non-default args:\s*(\{.*\})\s*$")
_ENGINE_CFG_RE = re.compile(
    r"(?:Initializing a V1 LLM engine|with config:).*?\benable_prefix_caching=(True|False|None)"
)
_NON_DEFAULT_KEY_RE = re.compile(r"['\"]enable_prefix_caching['\"]\s*:\s*(True|False|None)")

#: log bytes read at most: the startup lines are near the top of even a very long log.
MAX_LOG_BYTES = 4 * 1024 * 1024


@dataclass
class SourceReading(Record):
    """What one source says about prefix caching: on / off / not set / unavailable, and why."""

    SCHEMA = "prefix_cache_source"
    source: str  # launch_command | log_non_default_args | log_engine_config | cache_config_info | model_default
    state: str
    detail: str = ""
    authoritative: bool = False  # describes the running engine, not an intention


@dataclass
class Enablement(Record):
    """All readings, the effective state (running engine first) and whether the sources agree."""

    SCHEMA = "prefix_cache_enablement"
    readings: list[SourceReading] = field(default_factory=list)
    effective: str = UNAVAILABLE  # on | off | unavailable
    effective_from: str = ""
    agree: bool = True
    conflicts: list[str] = field(default_factory=list)
    profile: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Enablement:
        """Rebuild with the readings typed."""
        base = super().from_dict(data)
        base.readings = [r if isinstance(r, SourceReading) else SourceReading.from_dict(r) for r in base.readings]
        return base

    def reading(self, source: str) -> SourceReading | None:
        """One source's reading by name, or None."""
        return next((r for r in self.readings if r.source == source), None)

    def _repr_html_(self) -> str:
        tone = {"on": "good", "off": "bad"}.get(self.effective, "unknown")
        detail = f"from {self.effective_from}" if self.effective_from else "no source could say"
        if not self.agree:
            detail += " — sources disagree: " + "; ".join(self.conflicts)
            tone = "warn" if tone == "good" else tone
        rows = [r.to_dict() for r in self.readings]
        return banner(f"Prefix caching: {self.effective}", detail, tone) + html_table(
            rows, ["source", "state", "detail", "authoritative"]
        )


# -- individual sources -----------------------------------------------------------------------
def from_launch(command: str | list[str] | None) -> SourceReading:
    """The last of ``--enable-prefix-caching`` / ``--no-enable-prefix-caching`` wins, as in argparse."""
    if not command:
        return SourceReading("launch_command", UNAVAILABLE, "no launch command given")
    try:
        tokens = shlex.split(command) if isinstance(command, str) else [str(t) for t in command]
    except ValueError as exc:
        return SourceReading("launch_command", UNAVAILABLE, f"launch command does not parse: {exc}")
    state, seen = NOT_SET, ""
    for tok in tokens:
        flag, _, value = tok.replace("_", "-").partition("=")
        if flag == "--enable-prefix-caching":
            off = value.lower() in ("false", "0", "no")
            state, seen = (OFF if off else ON), tok
        elif flag in ("--no-enable-prefix-caching", "--disable-prefix-caching"):
            state, seen = OFF, tok
    detail = f"{seen} on the command line" if seen else "neither --enable-prefix-caching nor --no-enable-prefix-caching"
    return SourceReading("launch_command", state, detail)


def from_log(text: str | None) -> list[SourceReading]:
    """The startup log's ``non-default args`` dict and the engine-config line."""
    if text is None:
        return [
            SourceReading("log_non_default_args", UNAVAILABLE, "no startup log given"),
            SourceReading("log_engine_config", UNAVAILABLE, "no startup log given"),
        ]
    non_default = SourceReading("log_non_default_args", UNAVAILABLE, "no 'non-default args' line in the log")
    engine = SourceReading("log_engine_config", UNAVAILABLE, "no engine-config line in the log")
    for line in text.splitlines():
        if non_default.state == UNAVAILABLE and "non-default args" in line:
            non_default = _non_default_reading(line)
        if "enable_prefix_caching=" in line:
            m = _ENGINE_CFG_RE.search(line)
            if m:  # the last engine start in the log wins (a restart appends a new one)
                value = m.group(1)
                state = ON if value == "True" else OFF if value == "False" else NOT_SET
                engine = SourceReading("log_engine_config", state, f"enable_prefix_caching={value}", True)
    return [non_default, engine]


def _non_default_reading(line: str) -> SourceReading:
    value: Any = None
    m = _NON_DEFAULT_RE.search(line)
    if m:
        try:
            parsed = ast.literal_eval(m.group(1))
            if isinstance(parsed, dict):
                value = parsed.get("enable_prefix_caching", "__absent__")
        except (ValueError, SyntaxError):
            value = None
    if value is None or value == "__absent__":
        km = _NON_DEFAULT_KEY_RE.search(line)
        value = {"True": True, "False": False}.get(km.group(1)) if km else "__absent__"
    if value is True:
        return SourceReading("log_non_default_args", ON, "'enable_prefix_caching': True")
    if value is False:
        return SourceReading("log_non_default_args", OFF, "'enable_prefix_caching': False")
    return SourceReading("log_non_default_args", NOT_SET, "enable_prefix_caching not among non-default args (default)")


def from_cache_config(cache_config: dict[str, str] | None, failure: str = "") -> SourceReading:
    """What the running engine reports in ``vllm:cache_config_info`` (authoritative)."""
    if not cache_config:
        return SourceReading("cache_config_info", UNAVAILABLE, failure or "no vllm:cache_config_info on /metrics")
    raw = cache_config.get("enable_prefix_caching")
    if raw is None:
        return SourceReading("cache_config_info", UNAVAILABLE, "cache_config_info has no enable_prefix_caching label")
    state = ON if raw.lower() == "true" else OFF if raw.lower() == "false" else NOT_SET
    return SourceReading("cache_config_info", state, f'enable_prefix_caching="{raw}"', True)


def profile_default(profile: str | None = None, argv: str | list[str] | None = None) -> tuple[SourceReading, str]:
    """The model profile's default (standard attention: on; hybrid such as Kimi K3: off unless asked)."""
    try:
        from ..compat.profiles import guess_profile, load_profile

        if isinstance(argv, str):
            try:
                argv = shlex.split(argv)
            except ValueError:
                argv = argv.split()
        name = profile or guess_profile(list(argv) if argv else None)
        prof = load_profile(name)
    except (ImportError, KeyError, OSError, ValueError) as exc:
        return SourceReading("model_default", ON, f"model profiles unavailable ({exc}); assuming vLLM V1's default"), ""
    pc = ((prof.get("lint") or {}).get("prefix_caching")) or {}
    default_on = pc.get("default_on")
    if default_on is None:
        return SourceReading("model_default", ON, f"profile {name} states no default; vLLM V1 default is on"), name
    why = pc.get("why", "")
    return SourceReading("model_default", ON if default_on else OFF, f"profile {name}: {why}".strip()), name


# -- combination --------------------------------------------------------------------------------
def check_enablement(
    *,
    launch_command: str | list[str] | None = None,
    log_text: str | None = None,
    cache_config: dict[str, str] | None = None,
    metrics_failure: str = "",
    profile: str | None = None,
    model_default_on: bool | None = None,
) -> Enablement:
    """Combine the sources. The running engine (cache_config_info, engine-config line) decides the
    effective state; an explicit flag decides when neither is readable; else the model default."""
    launch = from_launch(launch_command)
    non_default, engine = from_log(log_text)
    metric = from_cache_config(cache_config, metrics_failure)
    if model_default_on is not None:
        default = SourceReading("model_default", ON if model_default_on else OFF, "given as a parameter")
        prof_name = profile or ""
    else:
        default, prof_name = profile_default(profile, launch_command)
    readings = [launch, non_default, engine, metric, default]

    effective, origin = UNAVAILABLE, ""
    for r in (metric, engine, launch, non_default):
        if r.state in (ON, OFF):
            effective, origin = r.state, r.source
            break
    if effective == UNAVAILABLE and (launch.state == NOT_SET or non_default.state == NOT_SET):
        effective, origin = default.state, "model_default (flag not set)"

    conflicts: list[str] = []
    explicit = [r for r in (launch, non_default, engine, metric) if r.state in (ON, OFF)]
    if len({r.state for r in explicit}) > 1:
        conflicts.append(", ".join(f"{r.source}={r.state}" for r in explicit))
    # A flag left unset means "the default": that too must match what the engine runs with.
    running = next((r for r in (metric, engine) if r.state in (ON, OFF)), None)
    for r in (launch, non_default):
        if r.state == NOT_SET and running and running.state != default.state:
            conflicts.append(f"{r.source} leaves the default ({default.state}) but {running.source}={running.state}")
    return Enablement(readings, effective, origin, not conflicts, conflicts, prof_name)


# -- where launch command and log come from -------------------------------------------------------
@dataclass
class LaunchAndLog(Record):
    """The launch command and log text to read, and where each came from."""

    SCHEMA = "prefix_cache_launch_log"
    launch_command: str | None = None
    launch_origin: str = ""
    # Never in a repr: a notebook keeps a cell's text/plain, and the log can be megabytes holding
    # secrets only a line cut would have caught.
    log_text: str | None = field(default=None, repr=False)
    log_origin: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:  # the log itself stays out of scraps: it can be megabytes
        """Plain JSON with the log replaced by its length: the log itself can be megabytes."""
        data = super().to_dict()
        data["log_text"] = None if self.log_text is None else f"<{len(self.log_text)} chars>"
        return data


def load_launch_and_log(
    launch_command: str | None = None, log_path: str | None = None, evidence_dir: str | None = None
) -> LaunchAndLog:
    """Parameters first; else runbook 01's evidence (through ``runs.load_result``). Never raises."""
    out = LaunchAndLog()
    if launch_command:
        out.launch_command, out.launch_origin = launch_command, "parameter"
    if log_path:
        text, note = _read_log(Path(log_path))
        out.log_text, out.log_origin = text, (f"parameter: {log_path}" if text is not None else "")
        if note:
            out.notes.append(note)
    if evidence_dir and (out.launch_command is None or out.log_text is None):
        from ..execution.runs import load_result

        try:
            evidence = load_result(evidence_dir, "evidence_capture")
        except (OSError, ValueError) as exc:  # absent, or refused (changed since capture): say so
            out.notes.append(f"evidence not readable under {evidence_dir}: {exc}")
            return out
        if out.launch_command is None:
            cmd = evidence.launch_command()
            if cmd:
                out.launch_command, out.launch_origin = cmd, "evidence: launch"
            else:
                out.notes.append("evidence has no launch command")
        if out.log_text is None:
            texts = []
            for path in evidence.log_paths():
                text, note = _read_log(path)
                if text is not None:
                    texts.append(text)
                elif note:
                    out.notes.append(note)
            if texts:
                out.log_text, out.log_origin = "\n".join(texts), f"evidence: {len(texts)} log file(s)"
            else:
                out.notes.append("evidence has no readable log")
    return out


def _read_log(path: Path) -> tuple[str | None, str]:
    """A launch log's text (plain or compressed) up to MAX_LOG_BYTES, and a note when cut or unreadable.

    Read through the one bounded log reader, so a gzip'd server log reads like a plain one and a
    decompression bomb or a binary file cannot blow the memory bound.
    """
    from ..logs.reader import LogUnreadable, open_log  # lazy: only a run with a log pays for it

    try:
        with open_log(path, max_bytes=MAX_LOG_BYTES) as reader:
            lines = [line for _, line in reader.lines()]
            stats = reader.stats
    except LogUnreadable as exc:
        return None, f"log not readable: {path}: {exc}"
    if stats.binary_stop:
        return None, f"log not readable: {path}: {stats.unread[-1]}"
    notes = [f"log {path} read up to its first {MAX_LOG_BYTES:,} bytes"] if stats.truncated else []
    notes += [f"log {path}: {u}" for u in stats.unread]
    return b"\n".join(lines).decode("utf-8", errors="replace"), "; ".join(notes)


def enablement_summary(en: Enablement) -> str:
    """One line for a verdict's evidence."""
    parts = [f"{r.source}={r.state}" for r in en.readings if r.state != UNAVAILABLE]
    return f"effective {en.effective} ({en.effective_from}); " + ", ".join(parts)
