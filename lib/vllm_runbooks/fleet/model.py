"""Fleet survey records: one row per node, the target it was judged against, and who did not answer.

Why typed rows: the same row is produced by the Ray survey and by the bundle-directory mode, and
the table, counts, plan and headline are all computed from rows alone — so two ways of collecting
the same facts give the same table by construction, and a test can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..records import Record

#: What the fleet does with a node, from its compatibility verdict for the target image.
ACTION_READY = "ready"  # the target image runs on the node as it is
ACTION_UPGRADE = "upgrade_driver"  # needs a newer driver branch first
ACTION_NOT_ELIGIBLE = "not_eligible"  # the GPU architecture is not supported by the image
ACTION_NO_GPU = "no_gpu"  # no NVIDIA driver or GPU found on the node
ACTION_UNKNOWN = "unknown"  # facts missing: the decision names them
ACTION_UNANSWERED = "unanswered"  # the node gave no bundle (died, timed out, no probe possible)
ACTIONS = (
    ACTION_READY,
    ACTION_UPGRADE,
    ACTION_NOT_ELIGIBLE,
    ACTION_NO_GPU,
    ACTION_UNKNOWN,
    ACTION_UNANSWERED,
)

#: Why a node did not answer (the ``why`` of an unanswered row).
WHY_DIED = "died"
WHY_TIMED_OUT = "timed_out"
WHY_NO_PROBE = "no_probe"
WHY_BAD_BUNDLE = "bad_bundle"
UNANSWERED_WHY = (WHY_DIED, WHY_TIMED_OUT, WHY_NO_PROBE, WHY_BAD_BUNDLE)

#: Columns of the fleet table, in display order (the same for both collection modes).
TABLE_COLUMNS = (
    "node",
    "hostname",
    "driver_version",
    "driver_branch",
    "driver_cuda",
    "gpu_name",
    "gpu_count",
    "compute_capability",
    "toolkit",
    "vllm_image",
    "vllm_version",
    "idle",
    "hardware",
    "hardware_summary",
    "vbios",
    "fit",
    "verdict",
    "action",
    "reason",
)


@dataclass
class TargetImage(Record):
    """The image the fleet is surveyed for: its CUDA, the model profile, and what the image carries.

    The node's *current* image is not the target: the decision for each node is made with the
    node's host facts (driver, GPUs) and these image facts, never with the image it runs today.
    """

    SCHEMA: ClassVar[str] = "fleet_target"

    image_cuda: str = "13.0"
    profile: str = "kimi_k3"
    image_ref: str | None = None
    nvidia_require_cuda: str | None = None
    compat_libs: bool = False


@dataclass
class NodeRow(Record):
    """One node of the fleet: its facts, the verdict for the target image, and what to do with it."""

    SCHEMA: ClassVar[str] = "fleet_node"

    node: str
    source: str = "bundle"  # bundle | ray | simulated (the documented test seam)
    hostname: str | None = None
    driver_version: str | None = None
    driver_branch: str | None = None
    driver_cuda: str | None = None
    gpu_name: str | None = None
    gpu_count: int = 0
    compute_capability: str | None = None
    toolkit: str | None = None
    vllm_image: str | None = None
    vllm_version: str | None = None
    running: bool | None = None  # a vLLM container is running now
    idle: bool | None = None  # no running server and no GPU memory in use
    # runbook 01's hardware verdict and start-up fit for the node (evidence items ``hardware`` and ``fit``);
    # a result saved before these existed reads back as unknown / None, never as healthy.
    hardware: str = "unknown"  # evidence.hardware.VERDICTS: healthy | degraded | faulty | unknown
    hardware_summary: str = ""  # short: Xid codes, faulty GPUs, the first finding
    hardware_findings: list[dict[str, Any]] = field(default_factory=list)  # the top faulty / degraded findings
    xids: list[int] = field(default_factory=list)
    faulty_gpus: list[int] = field(default_factory=list)
    vbios: list[str] = field(default_factory=list)  # the node's VBIOS versions (every GPU model)
    vbios_uniform: bool | None = None  # False: GPUs of one model run different VBIOS versions
    fit: str | None = None  # evidence.fit.STATUSES: pass | fail | unknown; None: no fit item in the evidence
    fit_failed: list[str] = field(default_factory=list)  # the fit checks that failed, in the fit item's words
    verdict: str = "unanswered"  # the compatibility verdict (runbook 02's vocabulary) or "unanswered"
    action: str = ACTION_UNANSWERED
    reason: str = ""
    remediation: str | None = None
    missing: list[str] = field(default_factory=list)
    why: str | None = None  # for unanswered nodes: died | timed_out | no_probe | bad_bundle
    evidence_dir: str | None = None
    bundle: str | None = None

    @property
    def answered(self) -> bool:
        """Whether the node gave a bundle (unanswered rows carry only why)."""
        return self.action != ACTION_UNANSWERED

    @property
    def configuration(self) -> tuple[str, ...]:
        """What makes two nodes the same for a rollout: GPU model and count, driver branch, toolkit."""
        return (
            self.gpu_name or "no GPU",
            str(self.gpu_count),
            self.driver_branch or "no driver",
            self.toolkit or "no toolkit",
        )

    @property
    def held_back(self) -> bool:
        """Whether the node must stay out of the rollout until fixed: a faulty GPU or a failed start-up fit."""
        return self.answered and (self.hardware == "faulty" or self.fit == "fail")

    @property
    def vbios_text(self) -> str:
        """The VBIOS versions as one cell: '96.00.A5.00.01', or both versions and '(mixed)'."""
        text = ", ".join(str(v) for v in self.vbios or [])
        return f"{text} (mixed)" if text and self.vbios_uniform is False else text

    def row(self) -> dict[str, Any]:
        """The table row: the columns of :data:`TABLE_COLUMNS` (the VBIOS list as one text cell)."""
        return {c: self.vbios_text if c == "vbios" else getattr(self, c) for c in TABLE_COLUMNS}


def unanswered(node: str, why: str, detail: str, source: str = "ray") -> NodeRow:
    """A row for a node that gave no bundle, saying why; it never stops the survey."""
    if why not in UNANSWERED_WHY:
        raise ValueError(f"unknown reason {why!r}; one of {UNANSWERED_WHY}")
    return NodeRow(node=node, source=source, why=why, reason=f"{why}: {detail}")
