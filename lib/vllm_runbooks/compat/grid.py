"""The compatibility grid: image CUDA versions × driver branches, each cell decided.

Why apart from the chart: the grid is a decision (one ``decide`` per cell, read as "a current
release of that branch"), the chart only draws it; a test or runbook 06 reads the grid without
plotly.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

from ..records import Record
from .decide import decide
from .facts import load_facts, parse_version, vstr
from .inputs import CompatInputs


def branch_verdict(
    image_cuda: str,
    branch: int,
    *,
    compute_capability: str | None,
    brand_class: str | None,
    compat_libs: bool,
    today: _dt.date,
) -> tuple[str, str]:
    """Verdict for an image on a driver branch, read as "a current release of that branch".

    The decision runs with `<branch>.0` as the driver version (the branch's earliest possible
    release); if the branch also holds the image's published minimum, the cell says natively
    compatible from that release, which is what an upgrade within the branch gives.
    """
    facts = load_facts()
    inputs = CompatInputs(
        image_cuda_version=image_cuda,
        driver_version=f"{branch}.0",  # the branch's earliest possible release, as a well-formed version
        compute_capability=compute_capability,
        brand_class=brand_class,
        compat_libs=compat_libs,
    )
    d = decide(inputs, today=today)
    tk = facts.toolkit_minimum(parse_version(image_cuda) or (0, 0))
    note = d.summary
    if d.verdict not in ("compatible", "arch_unsupported") and tk and tk.min_driver[0] == branch:
        return "compatible", f"native from {tk.min_text} ({tk.status}); earlier {branch} releases: {d.verdict}"
    return d.verdict, note


@dataclass
class CompatGrid(Record):
    """Rows (image CUDA), columns (driver branches), a verdict and a note per cell, and this host."""

    SCHEMA = "compat_grid"
    rows: list[str]
    branches: list[int]
    verdicts: list[list[str]]
    notes: list[list[str]]
    branch_types: dict[int, str] = field(default_factory=dict)
    host_row: str | None = None
    host_branch: int | None = None
    host_label: str = ""
    title: str = ""

    def verdict(self, image_cuda: str, branch: int) -> str:
        """The cell for one image CUDA row and driver branch."""
        return self.verdicts[self.rows.index(image_cuda)][self.branches.index(branch)]


def compat_grid(
    inputs: CompatInputs,
    *,
    today: _dt.date | None = None,
    compat_libs: bool | None = None,
    cuda_versions: list[str] | None = None,
) -> CompatGrid:
    """Decide every cell for this host's GPU (CC, brand) and compat-lib setting."""
    facts = load_facts()
    today = today or _dt.date.today()
    use_compat = bool(inputs.compat_libs if compat_libs is None else compat_libs)
    img = parse_version(inputs.image_cuda_version)
    drv = parse_version(inputs.driver_version)
    rows = list(cuda_versions or [vstr(v) for v in facts.known_cuda_minors() if v >= (12, 4)])
    host_row = vstr(img[:2]) if img and len(img) >= 2 else None
    if host_row and host_row not in rows:
        rows.append(host_row)
    rows.sort(key=lambda r: parse_version(r) or (0,))
    branches = sorted({b.branch for b in facts.branches()} | set(facts.fc_columns()) | ({drv[0]} if drv else set()))
    verdicts, notes = [], []
    for r in rows:
        cells = [
            branch_verdict(
                r,
                b,
                compute_capability=inputs.compute_capability,
                brand_class=inputs.brand_class,
                compat_libs=use_compat,
                today=today,
            )
            for b in branches
        ]
        verdicts.append([v for v, _ in cells])
        notes.append([n for _, n in cells])
    types = {b: bi.type for b in branches if (bi := facts.branch(b)) and bi.type}
    gpu = inputs.gpu_name or (f"CC {inputs.compute_capability}" if inputs.compute_capability else "GPU unknown")
    return CompatGrid(
        rows=rows,
        branches=branches,
        verdicts=verdicts,
        notes=notes,
        branch_types=types,
        host_row=host_row if drv else None,
        host_branch=drv[0] if drv and host_row else None,
        host_label=f"driver {inputs.driver_version}, image CUDA {inputs.image_cuda_version}",
        title=f"Image CUDA x driver branch ({gpu}, {inputs.brand_class or 'brand unknown'}, compat libs "
        f"{'on' if use_compat else 'off'}); cell = current release of the branch",
    )
