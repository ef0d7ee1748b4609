"""Collect evidence into ``<run_dir>/evidence/`` (read it back with ``runs.load_result``).

Layout::

    evidence/
      evidence.json     the record (docs/EVIDENCE_SCHEMA.md), with a sha256 manifest of raw/
      raw/...           redacted raw artefacts, named as in docs/BUNDLE.md; logs under raw/logs/
      SHA256SUMS        ``sha256sum -c`` compatible, covering evidence.json and raw/
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import redact
from ..artefacts import write_atomic
from ..execution.runjson import sha256_file
from ..execution.runner import new_run_dir
from ..probe import DEFAULT_TIMEOUT_S, Options
from ..records import utc_now
from ..resources import resolve_shipped_path
from .model import Evidence, Item
from .registry import Context, run_collectors
from .sources import BundleSource, LocalSource, Source


def resolve_run_dir(run_dir: str | Path | None) -> Path:
    """The given run dir, or a new ``runs/<timestamp>-interactive-<id>`` (never an existing one)."""
    return Path(run_dir) if run_dir else new_run_dir(label="interactive")


def open_source(source: str | Path, opts: Options) -> Source:
    """``local`` or a bundle path; a relative ``examples/…`` path missing here is the shipped sample."""
    if str(source) == "local":
        return LocalSource(opts)
    return BundleSource(resolve_shipped_path(source))


#: A collector bound beyond a day is a typo, not a plan (and a negative one abandons everything).
MAX_COLLECTOR_TIMEOUT_S = 24 * 3600


def collect_evidence(
    source: str | Path = "local",
    run_dir: str | Path | None = None,
    image: str | None = None,
    container: str | None = None,
    log_paths: list[str] | str | None = None,
    launch_command: str | list[str] | None = None,
    endpoint: str | None = None,
    probe_image: bool = False,
    collector_timeout_s: float = 60.0,
    pid: int | None = None,
    only: list[str] | None = None,
    kernel_log_hours: float = 72.0,
    expected_gpu_count: int | None = None,
) -> Evidence:
    """Run every registered collector against ``source`` and write ``<run_dir>/evidence/``.

    ``source`` is ``"local"`` or a bundle directory / ``.tar.gz``. Never raises for a missing
    tool or bad input: each gap is an ``unavailable`` item with its reason. Refuses to write
    into an evidence directory that already has content (runs are immutable).
    ``kernel_log_hours`` is the Xid / SXid lookback (local source); ``expected_gpu_count`` the GPUs
    the node must show (None or 0: the launch command's TP × PP × DP).
    """
    if (
        isinstance(kernel_log_hours, bool)
        or not isinstance(kernel_log_hours, int | float)
        or not (0 < kernel_log_hours <= 24 * 365)
    ):
        raise ValueError("kernel_log_hours must be a number of hours in (0, 8760]")
    if (
        isinstance(collector_timeout_s, bool)
        or not isinstance(collector_timeout_s, int | float)
        or not 0 < collector_timeout_s <= MAX_COLLECTOR_TIMEOUT_S
    ):
        raise ValueError(f"collector_timeout_s must be a number of seconds in (0, {MAX_COLLECTOR_TIMEOUT_S}]")
    rd = resolve_run_dir(run_dir)
    out = rd / "evidence"
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} already holds evidence; a run never overwrites another")
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(log_paths, str):
        log_paths = [log_paths] if log_paths else []
    if isinstance(launch_command, list):
        import shlex

        launch_command = shlex.join(str(a) for a in launch_command)
    opts = Options(
        image=image or None,
        container=container or None,
        log_paths=list(log_paths or []),
        launch_command=launch_command or None,
        pid=pid,
        endpoint=endpoint or None,
        probe_image=bool(probe_image),
        timeout_s=min(DEFAULT_TIMEOUT_S, max(1.0, float(collector_timeout_s) / 2)),
        kernel_log_hours=float(kernel_log_hours),
    )
    label = "local" if str(source) == "local" else redact.redact_text(str(source))
    items: dict[str, Item] = {}
    findings: list[str] = []
    written: dict[str, str] = {}
    try:
        src = open_source(source, opts)
    except (OSError, ValueError) as e:
        items["source"] = Item.unavailable(f"cannot open source: {redact.redact_text(str(e))}")
        return _finish(Evidence(source=label, collected_at=utc_now(), items=items), out)
    try:
        ctx = Context(
            src,
            opts,
            out,
            float(collector_timeout_s),
            launch_command=redact.redact_text(launch_command) if launch_command else None,
            endpoint=redact.redact_text(endpoint) if endpoint else None,
            expected_gpu_count=int(expected_gpu_count) if expected_gpu_count else None,
        )
        items = run_collectors(ctx, only)
        findings = src.findings()
        meta = getattr(src, "meta", None)
        if meta:
            ctx.keep("probe.json", (json.dumps(redact.redact_obj(meta), indent=2) + "\n").encode())
        written = ctx.hashes_written()
    finally:
        src.close()
    if findings:
        items["source"] = Item.partial({"findings": findings}, f"{len(findings)} bundle entries ignored")
    ev = Evidence(source=label, collected_at=utc_now(), items=items)
    return _finish(ev, out, written)


def _artefact_files(out: Path) -> list[str]:
    """Every file under ``out`` but the two the writer makes, relative and sorted (as ``rglob`` would)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(out):
        dirnames.sort()
        rel_dir = Path(dirpath).relative_to(out)
        for name in filenames:
            rel = (rel_dir / name).as_posix()
            if name in {"evidence.json", "SHA256SUMS"} or not os.path.isfile(os.path.join(dirpath, name)):
                continue
            found.append(rel)
    return sorted(found, key=lambda r: Path(r).parts)


def _finish(ev: Evidence, out: Path, written: dict[str, str] | None = None) -> Evidence:
    """Redact once more (idempotent), hash raw/, write evidence.json and SHA256SUMS.

    ``written``: hashes of artefacts this capture wrote from memory (``Context.hashes_written``);
    those are not read back. Any other file under ``out`` is hashed from disk.
    """
    for it in ev.items.values():
        it.value = redact.redact_obj(it.value)
        it.reason = redact.redact_text(it.reason) if it.reason else it.reason
    written = written or {}
    ev.artefacts = {rel: written.get(rel) or sha256_file(out / rel) for rel in _artefact_files(out)}
    ev.evidence_dir = str(out)
    # Never a half-written evidence.json: a temporary name, then a rename; a character UTF-8
    # cannot hold (a surrogate-escaped file name) is replaced rather than failing the write.
    write_atomic(out / "evidence.json", (ev.to_json() + "\n").encode("utf-8", "replace"))
    sums = dict(ev.artefacts)
    sums["evidence.json"] = sha256_file(out / "evidence.json")
    write_atomic(out / "SHA256SUMS", "".join(f"{h}  {p}\n" for p, h in sorted(sums.items())).encode("utf-8", "replace"))
    return ev
