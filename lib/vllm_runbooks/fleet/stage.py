"""Runbook 07's stage: ``Config`` → ``run(config)`` → :class:`FleetResult` (the stage contract).

Two ways in, one way out: a Ray cluster (``ray_address``: one probe task per alive node) or
folders of bundles collected any other way (``bundles``: a DaemonSet, a job array, an ssh loop).
Either way every node's bundle goes through the same evidence collection and runbook 02's
decision for the target image, into ``<run_dir>/fleet/<node>/``, then the table, counts and plan.
"""

from __future__ import annotations

import datetime as _dt
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..records import Record, utc_now
from ..resources import resolve_shipped_path
from .bundles import find_bundles
from .model import NodeRow, TargetImage
from .plan import make_plan
from .result import FleetResult
from .survey import Job, survey_nodes


@dataclass
class Config(Record):
    """Runbook 07's parameters, typed (the notebook's parameters cell and the CLI flags)."""

    SCHEMA: ClassVar[str] = "fleet_config"

    run_dir: str | None = None
    ray_address: str | None = None  # "auto", "host:6379" or "ray://host:10001"
    bundles: list[str] = field(default_factory=list)  # bundle folders (bundle-directory mode)
    image_cuda: str = "13.0"
    profile: str = "kimi_k3"
    image_ref: str | None = None
    nvidia_require_cuda: str | None = None
    compat_libs: bool = False
    node_timeout_s: float = 120.0
    probe_image: str | None = None  # image to docker-inspect on every node (Ray mode)
    probe_container: str | None = None  # container to inspect and take logs from (Ray mode)
    few_nodes: int = 3
    wave_size: int = 0
    workers: int = 0
    today: str | None = None

    def target(self) -> TargetImage:
        """The image every node is judged for (not the one it runs today)."""
        return TargetImage(
            image_cuda=str(self.image_cuda),
            profile=self.profile,
            image_ref=self.image_ref,
            nvidia_require_cuda=self.nvidia_require_cuda,
            compat_libs=bool(self.compat_libs),
        )

    def probe_args(self) -> list[str]:
        """The stdlib probe's flags for what to inspect on every node (Ray mode)."""
        args: list[str] = []
        if self.probe_image:
            args += ["--image", self.probe_image]
        if self.probe_container:
            args += ["--container", self.probe_container]
        return args


def _say(message: str) -> None:
    print(f"[fleet] {message}", file=sys.stdout, flush=True)


def _progress(total: int) -> Callable[[NodeRow], None]:
    """One line per node for a small fleet; one line per tenth for a large one (the notebook keeps them)."""
    step = 1 if total <= 50 else max(1, total // 10)
    seen = [0]

    def report(row: NodeRow) -> None:
        """Print the line for this node, or for every tenth of a large fleet."""
        seen[0] += 1
        if step == 1:
            _say(f"{row.node}: {row.action}")
        elif seen[0] % step == 0 or seen[0] == total:
            _say(f"{seen[0]}/{total} nodes read")

    return report


def _fleet_dir(run_dir: Path) -> Path:
    fleet = run_dir / "fleet"
    if fleet.exists() and any(fleet.iterdir()):
        raise FileExistsError(f"{fleet} already holds a survey; a run never overwrites another")
    fleet.mkdir(parents=True, exist_ok=True)
    return fleet


def run(config: Config) -> FleetResult:
    """Survey the fleet and plan the rollout. Raises only for a config that cannot run at all."""
    from ..execution.runner import new_run_dir

    if not config.bundles and not config.ray_address:
        raise ValueError("nothing to survey: give ray_address (a Ray cluster) or bundles (folders of node bundles)")
    if config.bundles and config.ray_address:
        raise ValueError("give ray_address or bundles, not both")
    started, t0 = utc_now(), time.monotonic()
    run_dir = Path(config.run_dir) if config.run_dir else new_run_dir(label="interactive")
    fleet = _fleet_dir(run_dir)
    target = config.target()
    today = config.today or _dt.datetime.now(_dt.UTC).date().isoformat()
    rows: list[NodeRow] = []
    jobs: list[Job] = []
    notes: list[str] = []
    if config.bundles:
        mode = "bundles"
        found, bad = find_bundles([resolve_shipped_path(b) for b in config.bundles])
        rows += bad
        jobs = [Job(node, str(path), str(fleet / node), target, "bundle", today) for node, path in found]
        _say(f"{len(found)} node bundle(s) in {', '.join(map(str, config.bundles))}")
    else:
        from .ray_survey import survey

        mode = "ray"
        answers = survey(
            str(config.ray_address),
            fleet,
            node_timeout_s=float(config.node_timeout_s),
            probe_args=config.probe_args(),
            progress=_say,
        )
        for a in answers:
            if a.bundle is None:
                rows.append(a.row)  # type: ignore[arg-type]
            else:
                source = "simulated" if a.simulated else "ray"
                jobs.append(Job(a.node, str(a.bundle), str(fleet / a.node), target, source, today))
        if any(a.simulated for a in answers):
            notes.append("Some nodes answered through the test seam (source 'simulated'): not real evidence.")
    surveyed = survey_nodes(jobs, workers=config.workers, progress=_progress(len(jobs)))
    nodes = sorted(surveyed + rows, key=lambda r: r.node)
    plan = make_plan(nodes, target, few=config.few_nodes, wave_size=config.wave_size)
    return FleetResult(
        mode=mode,
        target=target,
        nodes=nodes,
        plan=plan,
        surveyed_at=started,
        duration_s=round(time.monotonic() - t0, 2),
        notes=notes,
    )
