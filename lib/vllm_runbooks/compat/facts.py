"""NVIDIA compatibility facts, read from ``data/cuda_compat.yaml``.

Why a module of its own: every number a verdict rests on must come from the data file with its
source URL and status, so the decision code asks here and never carries a literal driver version.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from vllm_runbooks.records import Record

CONFIRMED = "CONFIRMED"
SECONDARY = "SECONDARY"
UNCONFIRMED = "UNCONFIRMED"
DERIVED = "DERIVED"

Version = tuple[int, ...]


@dataclass
class Fact(Record):
    """One cited fact: what it says, where it was read and how sure we are."""

    SCHEMA = "compat_fact"
    id: str
    text: str
    source: str
    status: str = CONFIRMED

    @property
    def usable(self) -> bool:
        """UNCONFIRMED facts may inform but must not drive a verdict by themselves."""
        return not self.status.upper().startswith(UNCONFIRMED)


def parse_version(text: str | int | float | None) -> Version | None:
    """'575.57.08' -> (575, 57, 8); '>=13.0' -> (13, 0); None or no digits -> None."""
    if text is None:
        return None
    m = re.search(r"\d+(?:\.\d+)*", str(text))
    if not m:
        return None
    return tuple(int(p) for p in m.group(0).split("."))


_DOTTED = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_CU_TAG = re.compile(r"cu(\d{2})(\d)", re.IGNORECASE)


def parse_cuda_version(text: str | None) -> tuple[Version | None, str]:
    """Image CUDA: 'major.minor[.patch]', or vLLM/PyTorch's 'cuXYZ' tag (cu130 = 13.0).

    Returns (version, note). version None: note says why (not given / could not parse). A 'cuXYZ'
    tag gives a note stating the reading, since the tag carries no patch level.
    """
    if text is None or not str(text).strip():
        return None, "no image CUDA version given (image_cuda_version)"
    raw = str(text).strip()
    m = _DOTTED.fullmatch(re.sub(r"^(?:cuda)[\s_-]?", "", raw, flags=re.IGNORECASE))
    if m:
        return tuple(int(g) for g in m.groups() if g is not None), ""
    m = _CU_TAG.fullmatch(raw)
    if m:
        v = (int(m.group(1)), int(m.group(2)))
        return v, (
            f"read image CUDA {raw!r} as CUDA {vstr(v)} (vLLM/PyTorch tag convention: cu130 = 13.0); "
            "the tag carries no patch level, so the GA row of the toolkit table is used and an Update "
            "may need a newer driver"
        )
    return None, f"could not parse image_cuda_version {raw!r}: give major.minor (e.g. 13.0) or a cuXYZ tag"


def parse_driver_version(text: str | None) -> tuple[Version | None, str]:
    """Host driver 'major.minor[.patch]' as nvidia-smi prints it; a bare branch ('580') is malformed."""
    if text is None or not str(text).strip():
        return None, "no host driver version given (driver_version)"
    raw = str(text).strip()
    if _DOTTED.fullmatch(raw):
        return parse_version(raw), ""
    return None, (
        f"could not parse driver_version {raw!r}: give the full driver version as nvidia-smi prints it "
        "(major.minor[.patch]); a branch number alone does not fix the driver's minimum-version standing"
    )


def parse_compute_capability(text: str | None) -> tuple[Version | None, str]:
    """'9.0' -> (9, 0); anything else -> None with the reason."""
    if text is None or not str(text).strip():
        return None, "no compute capability given (compute_capability)"
    raw = str(text).strip()
    if re.fullmatch(r"\d+\.\d+", raw):
        return parse_version(raw), ""
    return None, f"could not parse compute_capability {raw!r}: give major.minor (e.g. 9.0)"


def cmp_version(a: Version, b: Version) -> int:
    """Numeric comparison with missing components read as 0 (580 == 580.0.0)."""
    n = max(len(a), len(b))
    pa, pb = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (pa > pb) - (pa < pb)


def vstr(v: Version | None) -> str:
    """A version tuple as text ("?" when unknown), for reasons and labels."""
    return "?" if v is None else ".".join(str(p) for p in v)


def decode_cuda_int(n: int) -> Version:
    """cudaDriverGetVersion / torch 'found version' integer -> (major, minor): 12090 -> (12, 9)."""
    return (n // 1000, (n % 1000) // 10)


def _eol_date(text: str | None) -> _dt.date | None:
    """'February 2026' -> last day of that month; anything else (none published, conflicting) -> None."""
    if not text:
        return None
    m = re.match(r"\s*([A-Z][a-z]+)\s+(\d{4})", str(text))
    if not m:
        return None
    months = {name: i for i, name in enumerate(calendar.month_name) if name}
    if m.group(1) not in months:
        return None
    year, month = int(m.group(2)), months[m.group(1)]
    return _dt.date(year, month, calendar.monthrange(year, month)[1])


@dataclass
class ToolkitMinimum:
    """One row of the toolkit table: a CUDA release and the minimum Linux driver it needs."""

    label: str
    version: Version
    min_driver: Version
    status: str
    source: str
    min_text: str = ""  # as published (keeps zero padding: 580.82.07)


@dataclass
class BranchInfo(Record):
    """A driver branch as the data knows it (type PB/LTSB/NFB, end of life)."""

    SCHEMA = "driver_branch"
    branch: int
    type: str | None
    eol: str | None
    eol_date: str | None
    max_cuda_major_without_fc: int | None
    status: str
    source: str
    note: str | None = None

    def eol_passed(self, today: _dt.date) -> bool | None:
        """True when the branch's end of life is before ``today`` (a risk beside the verdict)."""
        if self.eol and "EOL" in self.eol.upper() and not self.eol_date:
            return True
        if not self.eol_date:
            return None
        return _dt.date.fromisoformat(self.eol_date) < today

    @property
    def label(self) -> str:
        """The branch as people write it (R575)."""
        return f"R{self.branch}"


@dataclass
class GpuInfo(Record):
    """A GPU product from the data: compute capability, architecture, brand class, with its source."""

    SCHEMA = "gpu_info"
    gpu: str
    compute_capability: str
    arch: str
    brand_class: str | None
    status: str
    source: str


class CompatFacts:
    """Typed view over the compat data file. Load once with :func:`load_facts`."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.toolkits = self._toolkits()

    # ---- toolkit -> minimum driver -------------------------------------------------------
    def _toolkits(self) -> list[ToolkitMinimum]:
        out = []
        sec = self.data["toolkit_driver_minimums"]
        for e in sec["entries"]:
            label = str(e["cuda"])
            m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?\s*(?:Update\s+(\d+))?", label)
            if not m:
                continue
            major, minor = int(m.group(1)), int(m.group(2))
            if m.group(3) is not None and int(m.group(3)) < 20:
                patch = int(m.group(3))  # "11.0.3 Update 1", "11.4.0 GA"
            elif m.group(4) is not None:
                patch = int(m.group(4))  # "12.9 Update 1"
            else:
                patch = 0  # "13.0 GA", "10.2.89" build numbers
            drv = parse_version(e["linux_x86_64"])
            if drv is None:
                continue
            out.append(
                ToolkitMinimum(
                    label,
                    (major, minor, patch),
                    drv,
                    e.get("status", CONFIRMED),
                    e.get("source", sec["source"]),
                    str(e["linux_x86_64"]).lstrip(">= "),
                )
            )
        return out

    def toolkit_minimum(self, cuda: Version) -> ToolkitMinimum | None:
        """Row for this toolkit: the highest published update <= the image's patch, same major.minor."""
        same = [t for t in self.toolkits if t.version[:2] == tuple(cuda[:2])]
        if not same:
            return None
        patch = cuda[2] if len(cuda) > 2 else 0
        fitting = [t for t in same if t.version[2] <= patch] or [min(same, key=lambda t: t.version)]
        return max(fitting, key=lambda t: (t.version, t.min_driver))

    def unconfirmed_toolkit(self, cuda: Version) -> dict[str, Any] | None:
        """The unconfirmed row for a newer CUDA, if any: reported, never used for a verdict."""
        for e in self.data["toolkit_driver_minimums"].get("unconfirmed_newer", []):
            if parse_version(e["cuda"]) == tuple(cuda[:2]):
                return e
        return None

    def driver_cuda(self, driver: Version) -> tuple[Version | None, ToolkitMinimum | None, str]:
        """The driver's own CUDA (major.minor) read off the toolkit table, or None with the reason.

        Derived only where the driver's branch has a row of its own: a branch the table does not
        list (newer than every row, an NFB between rows such as R565, or a pre-release below the
        branch's first row) may offer a CUDA version the table cannot name.
        """
        rows = [t for t in self.toolkits if not t.status.upper().startswith(UNCONFIRMED)]
        if not rows or len(driver) < 2:
            return None, None, "no usable toolkit rows" if not rows else "driver version without a minor number"
        newest = max(rows, key=lambda t: (t.min_driver, t.version))
        if driver[0] > newest.min_driver[0]:
            return (
                None,
                None,
                f"driver branch R{driver[0]} is newer than every row of the toolkit table (the newest, CUDA "
                f"{newest.label}, needs >= {newest.min_text}); the table cannot say which CUDA it offers",
            )
        ok = [t for t in rows if cmp_version(driver, t.min_driver) >= 0]
        if not ok:
            return None, None, "this driver is older than every row of the toolkit table"
        best = max(ok, key=lambda t: (t.version, t.min_driver))
        if best.min_driver[0] != driver[0]:
            own = [t for t in rows if t.min_driver[0] == driver[0]]
            if own:
                first = min(own, key=lambda t: t.min_driver)
                return (
                    None,
                    None,
                    f"this driver is below the first toolkit row of its branch R{driver[0]} (CUDA "
                    f"{first.label}, >= {first.min_text}); the table cannot say which CUDA such a release offers",
                )
            return (
                None,
                None,
                f"driver branch R{driver[0]} has no row of its own in the toolkit table (the nearest row below "
                f"is CUDA {best.label}, >= {best.min_text}); a branch the table does not list may offer a CUDA "
                "version the table does not name",
            )
        return best.version[:2], best, f"CUDA {best.label} needs >= {best.min_text}, the newest row this driver meets"

    def data_cuda_majors(self) -> set[int]:
        """CUDA majors the data has toolkit rows for: architecture claims stop outside these."""
        return {t.version[0] for t in self.toolkits}

    def known_cuda_minors(self) -> list[Version]:
        """Every CUDA major.minor the toolkit table knows (the chart's rows)."""
        return sorted({t.version[:2] for t in self.toolkits})

    # ---- minor version compatibility ------------------------------------------------------
    def mvc_entry(self, major: int) -> dict[str, Any] | None:
        """The minor-version compatibility entry of a CUDA major, or None."""
        for e in self.data["minor_version_compatibility"]["entries"]:
            if int(e["cuda_major"]) == major:
                return e
        return None

    # ---- forward compatibility ------------------------------------------------------------
    def fc_cell(self, package: str, branch: int) -> str | None:
        """The forward-compatibility matrix cell (C / X / None) for a compat package on a branch."""
        rows = self.data["forward_compatibility"]["support_matrix"]["rows"]
        return rows.get(package, {}).get(f"r{branch}")

    def fc_has_row(self, package: str) -> bool:
        """Whether the forward-compatibility matrix lists this compat package at all."""
        return package in self.data["forward_compatibility"]["support_matrix"]["rows"]

    def fc_older_cell(self, package: str, branch: int) -> str | None:
        """The cell in the older, secondhand matrix (shown as history, never decides)."""
        rows = self.data["forward_compatibility"]["support_matrix_older"]["rows"]
        return rows.get(package, {}).get(f"r{branch}")

    def fc_columns(self) -> list[int]:
        """Driver branches the forward-compatibility matrix has columns for."""
        cols = self.data["forward_compatibility"]["support_matrix"]["columns"]
        return [int(parse_version(c)[0]) for c in cols]  # type: ignore[index]

    # ---- driver branches --------------------------------------------------------------------
    def branch(self, branch: int) -> BranchInfo | None:
        """What the data says about a driver branch (type, EOL, source), or None."""
        sec = self.data["driver_branches"]
        for b in sec["branches"]:
            if parse_version(b["branch"]) == (branch,):
                eol = b.get("eol")
                # R580 publishes two EOL dates ("A / B"); keep the earlier one, the cautious reading.
                dates = [d for d in (_eol_date(p) for p in str(eol or "").split("/")) if d]
                eol_d = min(dates) if dates else None
                t = b.get("type")
                return BranchInfo(
                    branch,
                    None if t == UNCONFIRMED else t,
                    eol,
                    eol_d.isoformat() if eol_d else None,
                    b.get("max_cuda_major_without_fc"),
                    str(b.get("status", CONFIRMED)),
                    b.get("source", sec["definitions"]["source"]),
                    b.get("note"),
                )
        hist = sec.get("historical_classification", {})
        for kind in ("PB", "LTSB", "NFB"):
            if f"R{branch}" in hist.get(kind, []):
                older = sec.get("eol_list_older_page", {})
                eol = "EOL (listed among end-of-life branches)" if f"R{branch}" in older.get("text", "") else None
                return BranchInfo(
                    branch,
                    kind,
                    eol,
                    None,
                    None,
                    hist.get("status", SECONDARY),
                    hist.get("source", ""),
                    "type from a secondary classification",
                )
        return None

    def branches(self) -> list[BranchInfo]:
        """Every driver branch in the data."""
        nums = sorted({parse_version(b["branch"])[0] for b in self.data["driver_branches"]["branches"]})  # type: ignore[index]
        return [b for b in (self.branch(n) for n in nums) if b]

    # ---- architectures ------------------------------------------------------------------------
    def gpu(self, name: str | None) -> GpuInfo | None:
        """GPU name (NVML / nvidia-smi form) -> compute capability and brand class via the data."""
        if not name:
            return None
        sec = self.data["architecture_support"]["gpu_compute_capability"]
        hits = [e for e in sec["entries"] if re.search(e["match"], name, flags=re.IGNORECASE)]
        if not hits:
            return None
        e = max(hits, key=lambda e: len(e["match"]))  # the most specific pattern wins
        return GpuInfo(
            e["gpu"],
            str(e["cc"]),
            e["arch"],
            e.get("brand_class"),
            e.get("status", CONFIRMED),
            e.get("source", sec["source"]),
        )

    def cuda13_min_cc(self) -> Version:
        """CUDA 13's compute-capability floor."""
        return parse_version(self.data["architecture_support"]["cuda13_floor"]["min_compute_capability"])  # type: ignore[return-value]

    def arch_row(self, cc: Version) -> dict[str, Any] | None:
        """The architecture row (last CUDA, last driver) for a compute capability, or None."""
        for r in self.data["architecture_support"]["arch_matrix"]["rows"]:
            if any(parse_version(c) == tuple(cc[:2]) for c in r["cc"]):
                return r
        return None

    def min_toolkit_for_cc(self, cc: Version) -> dict[str, Any] | None:
        """The first CUDA that supports a compute capability, or None."""
        for e in self.data["architecture_support"]["minimum_toolkit_for_gpu"]:
            if parse_version(e["cc"]) == tuple(cc[:2]):
                return e
        return None

    def source(self, key: str) -> str:
        """A named source URL from the data file."""
        return self.data["sources"][key]


@functools.cache
def load_facts() -> CompatFacts:
    """The packaged facts (cached: the file does not change during a run)."""
    text = resources.files("vllm_runbooks").joinpath("data/cuda_compat.yaml").read_text(encoding="utf-8")
    return CompatFacts(yaml.safe_load(text))
