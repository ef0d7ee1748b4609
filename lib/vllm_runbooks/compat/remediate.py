"""Choose ONE remediation path from the verdict and the organisation's constraints.

Why: the incident's cost came from trying many things on the same node. The recommendation picks
one path, says why the others were not picked, and lists the baseline to save first so the change
can be rolled back and reviewed.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from vllm_runbooks.records import Record

from .. import display as H
from .decide import OK_VERDICTS, CompatDecision, decide
from .facts import UNCONFIRMED, cmp_version, load_facts, parse_cuda_version, parse_version, vstr
from .lint import LintReport
from .profiles import load_profile

PATHS = (
    "no_driver_change",
    "upgrade_driver",
    "isolated_environment_first",
    "forward_compatibility",
    "older_cuda_image",
    "self_built_older_cuda_image",
    "move_to_supported_gpus",
    "collect_evidence",
)

# What to save before any change. Commands are suggestions to run, not facts.
BASELINE = (
    (
        "driver",
        "Driver version and branch, kernel module",
        "nvidia-smi -q -x > nvidia-smi-q.xml; cat /proc/driver/nvidia/version; dpkg -l | grep -i nvidia (or rpm -qa)",
    ),
    ("kernel", "Kernel and OS", "uname -a; cat /etc/os-release"),
    ("gpu_state", "GPU state: persistence, MIG, ECC, clocks, topology", "nvidia-smi -q; nvidia-smi topo -m"),
    (
        "running_jobs",
        "Running jobs on the node(s)",
        "nvidia-smi --query-compute-apps=pid,name,used_memory "
        "--format=csv; scheduler queue (squeue / kubectl get pods -o wide)",
    ),
    (
        "runtime",
        "Container runtime and NVIDIA Container Toolkit version and config",
        "docker info; nvidia-ctk --version; nvidia-container-cli --version; "
        "cat /etc/nvidia-container-runtime/config.toml",
    ),
    (
        "interconnect",
        "NCCL env, RDMA devices, NVLink / fabric state",
        "env | grep ^NCCL_; ibv_devinfo; nvidia-smi nvlink -s; nvidia-smi -q | grep -A5 -i fabric",
    ),
    (
        "inference_check",
        "Short inference check on the current setup (or its failure log)",
        "runbook 03 steps 1-3 against the current image",
    ),
    ("communication_check", "Short multi-GPU communication check", "nccl-tests all_reduce_perf -b 8 -e 256M -g <gpus>"),
    (
        "rollback",
        "Rollback artefacts: current driver packages / installer, DKMS state, image digests, launch command",
        "keep the driver package files and `docker image inspect --format '{{.RepoDigests}}' IMAGE`",
    ),
)


@dataclass
class OrgConstraints(Record):
    """What the organisation allows right now."""

    SCHEMA = "org_constraints"
    maintenance_window_available: bool = False
    shared_nodes_can_stop: bool = False
    can_maintain_custom_build: bool = False
    isolated_environment_available: bool = False
    recovery_deadline_hours: float | None = None
    fast_path_hours: float = 4.0  # org policy: a deadline this close prefers a transitional path first


@dataclass
class TargetBranch(Record):
    """A driver branch the remediation may move to, with its minimum release and source."""

    SCHEMA = "target_branch"
    branch: str
    type: str
    eol: str | None
    minimum: str
    source: str
    status: str


@dataclass
class Remediation(Record):
    """The one recommended path, with what to do first and what was considered."""

    SCHEMA = "compat_remediation"
    SCHEMA_VERSION = 1
    path: str
    title: str
    verdict: str
    reasons: list[str]
    risks: list[str]
    prerequisites: list[str]
    first_steps: list[str]
    baseline: list[dict[str, str]]
    target_branches: list[TargetBranch] = field(default_factory=list)
    avoid_branches: list[str] = field(default_factory=list)
    alternatives: list[dict[str, str]] = field(default_factory=list)
    follow_up: list[str] = field(default_factory=list)
    blocked: bool = False
    constraints: OrgConstraints = field(default_factory=OrgConstraints)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Remediation:
        """Rebuild with target branches and constraints typed."""
        d = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        d["target_branches"] = [TargetBranch.from_dict(t) for t in data.get("target_branches") or []]
        d["constraints"] = OrgConstraints.from_dict(data.get("constraints") or {})
        return cls(**d)

    def _repr_html_(self) -> str:
        parts = [
            f"<h4>Recommended path: {H.badge(self.path)} {H.esc(self.title)}"
            + (" (blocked)" if self.blocked else "")
            + "</h4>"
        ]
        for name, items in (
            ("Why", self.reasons),
            ("Risks", self.risks),
            ("Prerequisites", self.prerequisites),
            ("First steps", self.first_steps),
            ("Follow-up", self.follow_up),
        ):
            if items:
                parts.append(f"<b>{name}</b>" + H.bullets(items))
        if self.target_branches:
            parts.append(
                "<b>Target driver branches (from the data)</b>"
                + H.cells_table(
                    ["branch", "type", "end of life", "minimum", "status", "source"],
                    [
                        [
                            H.esc(t.branch),
                            H.esc(t.type),
                            H.esc(t.eol),
                            H.esc(t.minimum),
                            H.esc(t.status),
                            H.link(t.source),
                        ]
                        for t in self.target_branches
                    ],
                )
            )
        if self.avoid_branches:
            parts.append("<b>Avoid</b>" + H.bullets(self.avoid_branches))
        parts.append(
            "<b>Baseline to save before any change</b>"
            + H.cells_table(
                ["item", "what", "how"],
                [[H.esc(b["item"]), H.esc(b["what"]), f"<code>{H.esc(b['how'])}</code>"] for b in self.baseline],
            )
        )
        if self.alternatives:
            parts.append(
                "<b>Considered, not chosen</b>"
                + H.cells_table(
                    ["path", "why not"], [[H.esc(a["path"]), H.esc(a["why_not"])] for a in self.alternatives]
                )
            )
        return "\n".join(parts)


def driver_targets(
    image_cuda: str, *, compute_capability: str | None = None, today: _dt.date | None = None
) -> tuple[list[TargetBranch], list[str]]:
    """Supported (PB / LTSB, not end of life) branches that run this CUDA natively, LTSB first."""
    facts = load_facts()
    today = today or _dt.date.today()
    img, _ = parse_cuda_version(image_cuda)
    if not img or len(img) < 2:
        return [], []
    tk = facts.toolkit_minimum(img)
    if tk and not tk.status.upper().startswith(UNCONFIRMED):
        need_branch, need_text, need_src = tk.min_driver[0], tk.min_text, tk.source
    else:
        mvc = facts.mvc_entry(img[0])
        floor = parse_version(mvc["min_driver_linux"]) if mvc else None
        if not floor:
            return [], []
        need_branch, need_text, need_src = floor[0], str(mvc["min_driver_linux"]).lstrip(">= "), mvc["source"]
    cap = None
    cc = parse_version(compute_capability)
    if cc:
        row = facts.arch_row(cc)
        if row and row.get("last_driver") not in (None, "ongoing"):
            cap = parse_version(row["last_driver"])
    targets, avoid = [], []
    for b in facts.branches():
        if b.branch < need_branch or (cap and b.branch > cap[0]):
            continue
        if b.type not in ("PB", "LTSB") or b.status.upper().startswith(UNCONFIRMED):
            if b.type == "NFB":
                avoid.append(f"R{b.branch} (New Feature Branch: not for production, not a forward-compat target)")
            continue
        if b.eol_passed(today):
            avoid.append(f"R{b.branch} (end of life: {b.eol})")
            continue
        minimum = f">= {need_text}" if b.branch == need_branch else "any release of the branch"
        targets.append(TargetBranch(f"R{b.branch}", b.type or "?", b.eol, minimum, b.source, b.status))
    targets.sort(key=lambda t: (0 if t.type == "LTSB" else 1, t.branch))
    if targets and need_src:
        targets[0].minimum += f" (CUDA {vstr(img[:2])} minimum, {need_src})"
    return targets, avoid


def _baseline() -> list[dict[str, str]]:
    return [{"item": i, "what": w, "how": h} for i, w, h in BASELINE]


def recommend(
    decision: CompatDecision,
    constraints: OrgConstraints | None = None,
    *,
    lint: LintReport | None = None,
    today: _dt.date | None = None,
) -> Remediation:
    """One path with reasons, risks, prerequisites and first steps. Pure: reads data and records only.

    A faulty GPU or a failed start-up fit (runbook 01) comes first: the path is then the hardware
    line's (``hardware_route.HARDWARE_PATHS``), with the compatibility path kept as the follow-up.
    """
    compat = _recommend_compat(decision, constraints, lint=lint, today=today)
    return _hardware_first(decision, compat)


def _hardware_first(decision: CompatDecision, compat: Remediation) -> Remediation:
    """The hardware-line remediation when hardware or fit blocks the start; ``compat`` otherwise."""
    from .hardware_route import TITLES, hardware_lines, hardware_path, hardware_steps

    path = hardware_path(decision.inputs)
    if path is None:
        return compat
    lines = hardware_lines(decision.inputs)
    return Remediation(
        path,
        TITLES[path],
        decision.verdict,
        lines + [f"Compatibility beside it: {decision.summary}"],
        ["Changing the driver or the image first would not fix this, and would erase the evidence of the fault."],
        ["Drain the node / stop the work on the GPU before acting", "Baseline saved (runbook 01 evidence)"],
        hardware_steps(path, decision.inputs),
        compat.baseline,
        alternatives=[{"path": compat.path, "why_not": f"hardware line first; then: {compat.title}"}],
        follow_up=[f"Once runbook 01 shows the GPU healthy and the launch fits: {compat.path} — {compat.title}"],
        constraints=compat.constraints,
    )


def _recommend_compat(
    decision: CompatDecision,
    constraints: OrgConstraints | None = None,
    *,
    lint: LintReport | None = None,
    today: _dt.date | None = None,
) -> Remediation:
    """The CUDA line's path from the compatibility verdict and the constraints."""
    c = constraints or OrgConstraints()
    today = today or _dt.date.fromisoformat(decision.evaluated_on)
    inputs = decision.inputs
    prof = load_profile(inputs.model_profile) if inputs.model_profile else {}
    im = prof.get("image") or {}
    base = _baseline()
    v = decision.verdict
    alts: list[dict[str, str]] = []

    def rem(
        path: str, title: str, reasons: list[str], risks: list[str], pre: list[str], steps: list[str], **kw: Any
    ) -> Remediation:
        return Remediation(path, title, v, reasons, risks, pre, steps, base, constraints=c, alternatives=alts, **kw)

    if v in OK_VERDICTS:
        reasons = [decision.summary] + decision.routes[1:]
        if lint:
            reasons += [f"Launch lint: {f.flag}: {f.message}" for f in lint.errors + lint.warnings]
        follow = []
        risks = [r.text for r in decision.risks if r.severity in ("error", "warning")]
        if v == "compatible_forward_compat":
            targets, avoid = driver_targets(
                inputs.image_cuda_version or "", today=today, compute_capability=inputs.compute_capability
            )
            follow.append(
                "Forward compatibility is a bridge: schedule a driver upgrade to "
                + (", ".join(t.branch for t in targets) or "a supported branch")
                + " and remove the compat libraries at that time (error 803 otherwise)."
            )
        if v == "compatible_minor_version":
            follow.append(
                "Minor-version compatibility limits features; watch for error 36 / 222 and plan the "
                "driver upgrade to the image's native minimum."
            )
        return rem(
            "no_driver_change",
            "The driver is not the problem: keep it, investigate the other lines",
            reasons,
            risks,
            [],
            [
                "Keep the node as it is (no driver change).",
                "Fix launch-lint errors one at a time, re-running the canary after each.",
                "Follow the routes above in order: communication backend, GPU count, "
                "model loading, tool-call configuration.",
            ],
            follow_up=follow,
        )

    if v == "unknown":
        how = {
            "driver_version": "run runbook 01 on the host (nvidia collector) or pass --driver",
            "image_cuda_version": "read CUDA_VERSION from the image config (docker inspect / skopeo inspect)",
            "compute_capability": "nvidia-smi --query-gpu=name,compute_cap --format=csv",
            "brand_class": "nvidia-smi -q | grep -i 'Product Brand' (GeForce vs data center)",
            "compat_libs": "check VLLM_ENABLE_CUDA_COMPATIBILITY and LD_LIBRARY_PATH in the launch env",
            "driver_cuda_version": "the 'CUDA Version' nvidia-smi prints for the driver (runbook 01 nvidia collector)",
        }
        fact_how = (
            "the data has no such fact: add it to data/cuda_compat.yaml from a cited source "
            "(docs/DEVELOPING.md), do not assume it"
        )
        return rem(
            "collect_evidence",
            "Establish the missing inputs before changing anything",
            [f"The verdict is unknown: missing {', '.join(decision.missing) or 'inputs'}."],
            [],
            [f"{m}: {fact_how if m.startswith('fact:') else how.get(m, 'collect it')}" for m in decision.missing],
            ["Re-run runbook 01 with the missing collectors, then runbook 02."],
        )

    if v == "arch_unsupported":
        facts = load_facts()
        cc = inputs.compute_capability or "?"
        arch12 = str(facts.data["architecture_support"]["vllm"]["torch_cuda_arch_list_cu129"]).split()
        verified = (prof.get("gpus") or {}).get("verified") or []
        if im.get("cuda_major") and not im.get("older_cuda_tag"):
            alts.append(
                {
                    "path": "older_cuda_image",
                    "why_not": f"{prof.get('title')}: no older-CUDA image "
                    "is published; the profile needs CUDA " + str(im["cuda_major"]),
                }
            )
            return rem(
                "move_to_supported_gpus",
                "Run on GPUs this CUDA supports",
                [f"{decision.summary}", f"Recipe-verified GPUs: {', '.join(verified) or '-'}."],
                ["No driver change can fix an architecture gap."],
                ["Capacity on a supported GPU class (isolated node first)."],
                ["Reserve one supported node; run runbook 03 there."],
            )
        if im.get("older_cuda_tag") and cc in arch12:
            return rem(
                "older_cuda_image",
                f"Use the vendor's older-CUDA image ({im['older_cuda_tag']} tag)",
                [
                    decision.summary,
                    f"vLLM's CUDA {im.get('older_cuda_cuda')} build targets CC {cc} "
                    f"(TORCH_CUDA_ARCH_LIST {' '.join(arch12)}).",
                ],
                ["Older-CUDA images are a transition: newer vLLM releases may drop them."],
                ["Pin the image digest."],
                [
                    f"Pull the matching {im['older_cuda_tag']} tag and pin its digest.",
                    "Validate on one isolated node (runbook 03).",
                ],
            )
        return rem(
            "move_to_supported_gpus",
            "Run on GPUs this CUDA supports",
            [decision.summary],
            ["No driver change can fix an architecture gap."],
            [],
            ["Reserve one supported node."],
        )

    # ---- driver_too_old ------------------------------------------------------------------------
    targets, avoid = driver_targets(
        inputs.image_cuda_version or "", today=today, compute_capability=inputs.compute_capability
    )
    tnames = ", ".join(f"{t.branch} ({t.type}, EOL {t.eol})" for t in targets) or "none found in the data"
    fc_try = decide(dataclasses.replace(inputs, compat_libs=True), today=today)
    fc_ok = fc_try.verdict == "compatible_forward_compat" and inputs.compat_libs is not True
    older_ok, older_tag = False, im.get("older_cuda_tag")
    if older_tag and im.get("older_cuda_cuda"):
        older_try = decide(
            dataclasses.replace(inputs, image_cuda_version=str(im["older_cuda_cuda"]), compat_libs=False), today=today
        )
        older_ok = older_try.verdict in ("compatible", "compatible_minor_version")
    tight = c.recovery_deadline_hours is not None and c.recovery_deadline_hours <= c.fast_path_hours
    can_upgrade_here = c.maintenance_window_available and c.shared_nodes_can_stop
    recipe_note = ""
    if im.get("min_driver_branch"):
        recipe_note = f"{prof.get('title')}: {im.get('min_driver_text', '')}"

    upgrade_steps = [
        "Save the baseline below on every node in scope.",
        f"Stage 1: one isolated node: install a supported branch ({targets[0].branch if targets else 'see data'} "
        f"{targets[0].minimum if targets else ''}), reboot, check nvidia-smi and /proc/driver/nvidia/version agree.",
        "Run runbook 01 and 02 again on that node (verdict must be `compatible`), then runbook 03 (canary).",
        "Stage 2: a few nodes, with the communication check across them; Stage 3: the rest of the cluster.",
        "Remove any cuda-compat library activation (VLLM_ENABLE_CUDA_COMPATIBILITY, LD_LIBRARY_PATH) after the "
        "upgrade: compat libs older than the driver fail with error 803.",
    ]
    upgrade_risks = [
        "A driver upgrade needs the GPUs idle and usually a reboot; running jobs stop.",
        "Other images on the shared nodes move to the new driver too (newer drivers run older CUDA "
        "natively: backward compatibility).",
    ]
    options: dict[str, Remediation] = {}
    options["upgrade_driver"] = rem(
        "upgrade_driver",
        "Upgrade the driver to a supported branch, staged",
        [
            decision.summary,
            f"Supported target branches from the data (long-term first): {tnames}.",
            "Maintenance window available and the nodes can be stopped."
            if can_upgrade_here
            else "No window / nodes cannot stop: this path is blocked until one is granted.",
        ]
        + ([recipe_note] if recipe_note else []),
        upgrade_risks,
        ["Maintenance window", "Drain the nodes", "Driver packages for the target branch staged", "Baseline saved"],
        upgrade_steps,
        target_branches=targets,
        avoid_branches=avoid,
        blocked=not can_upgrade_here,
    )
    options["isolated_environment_first"] = rem(
        "isolated_environment_first",
        "Move to an isolated environment first, upgrade its driver there",
        [
            decision.summary,
            "The shared cluster cannot stop now, but an isolated environment is available: "
            f"bring it to a supported branch ({tnames}) and serve from it.",
            "The shared cluster's upgrade is scheduled for the next maintenance window.",
        ]
        + ([recipe_note] if recipe_note else []),
        [
            "Capacity: the isolated environment must hold the model's GPU count.",
            "Two driver states in the fleet until the cluster is upgraded; keep records per node.",
        ],
        ["Isolated node(s) with the model's GPU count and interconnect", "Baseline saved"],
        [
            "Save the baseline on the isolated node.",
            f"Install {targets[0].branch if targets else 'a supported'} branch there and reboot.",
            "Run runbooks 01-03 there; route traffic only after the canary passes.",
            "Book the shared-cluster upgrade (staged) for the next window.",
        ],
        target_branches=targets,
        avoid_branches=avoid,
    )
    if fc_ok:
        options["forward_compatibility"] = rem(
            "forward_compatibility",
            "Enable the image's CUDA forward-compatibility libraries (transitional)",
            [
                decision.summary,
                "The forward-compatibility matrix supports this host for the image's compat package "
                f"on a data-center / select professional GPU: {fc_try.forward_compat.get('why')}.",
            ],
            ["Transitional only: remove the compat libraries when the driver is upgraded (error 803 otherwise)."]
            + [r.text for r in fc_try.risks if r.kind in ("end_of_life_branch", "forward_compat_limits")]
            + ([f"Outside the model recipe: {recipe_note}"] if recipe_note else []),
            ["The image ships cuda-compat (NV_CUDA_COMPAT_PACKAGE)", "Baseline saved"],
            [
                "Set VLLM_ENABLE_CUDA_COMPATIBILITY=1 for the launch (vLLM images) or put "
                "/usr/local/cuda-X.Y/compat on LD_LIBRARY_PATH.",
                "Check the image's NVIDIA_REQUIRE_CUDA admits this "
                "driver (brand/driver clause), or the runtime refuses the container.",
                "Validate on one node with runbook 03; plan the driver upgrade.",
            ],
            follow_up=["Driver upgrade to " + (targets[0].branch if targets else "a supported branch")],
        )
    if older_ok:
        options["older_cuda_image"] = rem(
            "older_cuda_image",
            f"Use the vendor's older-CUDA image ({older_tag} tag, transitional)",
            [
                decision.summary,
                f"The vendor publishes a CUDA {im['older_cuda_cuda']} image ({older_tag}) that this "
                f"driver runs: {older_try.verdict}.",
                im.get("older_cuda_text", ""),
            ],
            ["Transitional: the default image stays on the newer CUDA; plan the driver upgrade."],
            ["Pin the image digest", "Baseline saved"],
            [
                f"Pull the same release with the {older_tag} suffix and pin its digest.",
                "Re-run runbook 02 with the new image, then runbook 03 on one node.",
            ],
            follow_up=["Driver upgrade to " + (targets[0].branch if targets else "a supported branch")],
        )
    if c.can_maintain_custom_build:
        options["self_built_older_cuda_image"] = rem(
            "self_built_older_cuda_image",
            "Build an older-CUDA image yourself (transitional, pinned)",
            [
                decision.summary,
                im.get("older_cuda_text") or "No vendor image for an older CUDA fits.",
                "The team can pin and rebuild a custom image.",
            ],
            [
                "Unverified by the model recipe; every upstream release means a rebuild.",
                "Kernels built for the older CUDA may lack newer-GPU features.",
            ],
            ["Build pipeline, pinned source commit and wheels", "Owner for rebuilds"],
            [
                "Build from the same vLLM commit with the older CUDA base image; pin the digest.",
                "Run runbooks 02-03 on one isolated node.",
            ],
            follow_up=["Driver upgrade to " + (targets[0].branch if targets else "a supported branch")],
        )

    if tight:
        order = [
            "forward_compatibility",
            "older_cuda_image",
            "isolated_environment_first",
            "upgrade_driver",
            "self_built_older_cuda_image",
        ]
    else:
        order = [
            "upgrade_driver",
            "isolated_environment_first",
            "forward_compatibility",
            "older_cuda_image",
            "self_built_older_cuda_image",
        ]
    feasible = {
        k: o
        for k, o in options.items()
        if not o.blocked and (k != "isolated_environment_first" or c.isolated_environment_available)
    }
    chosen = next((k for k in order if k in feasible), "upgrade_driver")
    why_not = {
        "upgrade_driver": "needs a maintenance window and nodes that can stop"
        if not can_upgrade_here
        else ("slower than a transitional path within the deadline" if tight else ""),
        "isolated_environment_first": "no isolated environment available"
        if not c.isolated_environment_available
        else "",
        "forward_compatibility": "",
        "older_cuda_image": "",
        "self_built_older_cuda_image": "",
    }
    for k in PATHS:
        if k == chosen or k in ("no_driver_change", "collect_evidence", "move_to_supported_gpus"):
            continue
        if k not in options:
            reason = {
                "forward_compatibility": str(fc_try.forward_compat.get("why") or "not applicable")
                if inputs.compat_libs is not True
                else "compat libraries are already in use and do not help here",
                "older_cuda_image": (im.get("older_cuda_text") or "no older-CUDA image published")
                if not older_tag
                else "the older-CUDA image does not run on this driver either",
                "self_built_older_cuda_image": "the team cannot maintain a custom build",
            }.get(k, "")
        else:
            reason = why_not.get(k) or "ranked lower for these constraints"
        alts.append({"path": k, "why_not": reason})
    result = options[chosen]
    if chosen == "upgrade_driver" and result.blocked:
        result.reasons.append(
            "No other path is feasible under these constraints: escalate for a maintenance "
            "window or an isolated environment."
        )
    if tight:
        result.reasons.append(
            f"Recovery deadline in {c.recovery_deadline_hours:g} h (<= {c.fast_path_hours:g} h): "
            "a transitional path first where one exists."
        )
    if cmp_version(parse_version(inputs.driver_version) or (0,), (0,)) == 0:
        result.prerequisites.append("driver version unknown")
    return result
