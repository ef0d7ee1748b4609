"""Launch lint: the vLLM command line against the model profile and the host's interconnect.

Why: once the driver is ruled out, the usual culprits are flags (wrong tool-call parser, an
all-to-all backend for the wrong fabric, parallel sizes that do not fit the GPUs). Each finding
names the flag, why it matters and the source, so the on-call engineer changes one thing at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_runbooks.records import Record

from .. import display as H
from .inputs import CompatInputs
from .launch import ParsedLaunch, parse_launch
from .profiles import load_profile

# Valid --all2all-backend values (vllm/config/parallel.py, commit 00193b82; shared/reference/vllm_notes.md 2.3).
ALL2ALL_BACKENDS = (
    "naive",
    "pplx",
    "deepep_high_throughput",
    "deepep_low_latency",
    "deepep_v2",
    "mori_high_throughput",
    "mori_low_latency",
    "nixl_ep",
    "allgather_reducescatter",
    "flashinfer_all2allv",
    "flashinfer_nvlink_two_sided",
    "flashinfer_nvlink_one_sided",
)
ALL2ALL_DEFAULT = "allgather_reducescatter"
SEVERITIES = ("error", "warning", "info", "ok")


@dataclass
class LintFinding(Record):
    """One finding: the flag, why it matters, what to change, and the source."""

    SCHEMA = "lint_finding"
    severity: str  # error | warning | info | ok
    flag: str
    message: str
    source: str | None = None
    suggestion: str | None = None


@dataclass
class LintReport(Record):
    """Findings for one launch command against one profile."""

    SCHEMA = "launch_lint"
    SCHEMA_VERSION = 1
    profile: str
    launch: ParsedLaunch
    findings: list[LintFinding] = field(default_factory=list)
    interconnect: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[LintFinding]:
        """Findings that would break the launch."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[LintFinding]:
        """Findings that degrade it or look wrong."""
        return [f for f in self.findings if f.severity == "warning"]

    def by_flag(self, flag: str) -> list[LintFinding]:
        """Findings about one flag."""
        return [f for f in self.findings if f.flag == flag]

    def _repr_html_(self) -> str:
        order = {s: i for i, s in enumerate(SEVERITIES)}
        rows = [
            [
                H.badge(f.severity),
                f"<code>{H.esc(f.flag)}</code>",
                H.esc(f.message),
                f"<code>{H.esc(f.suggestion)}</code>" if f.suggestion else "",
                H.link(f.source, "source"),
            ]
            for f in sorted(self.findings, key=lambda f: order.get(f.severity, 9))
        ]
        cmd = " ".join(self.launch.raw) or "(no launch command in evidence)"
        return (
            f"<h4>Launch lint ({H.esc(self.profile)}): {len(self.errors)} error(s), "
            f"{len(self.warnings)} warning(s)</h4><p><code>{H.esc(cmd)}</code></p>"
            + H.cells_table(["severity", "flag", "why", "suggestion", "source"], rows)
        )


def _multi_node(p: ParsedLaunch, world: int, gpu_count: int | None) -> bool | None:
    if p.int_of("--nnodes", 1) > 1 or p.has("--headless") or p.has("--node-rank"):
        return True
    dpl = p.get("--data-parallel-size-local")
    if dpl not in (None, True) and p.int_of("--data-parallel-size-local") < p.int_of("--data-parallel-size"):
        return True
    if gpu_count is None:
        return None
    return world > gpu_count


def lint_launch(
    argv: list[str] | str | None,
    *,
    profile: str = "generic_vllm",
    gpu_count: int | None = None,
    env: dict[str, str] | None = None,
    rdma_devices: list[str] | None = None,
    nvlink: str | None = None,
    mnnvl: bool | None = None,
    want_prefix_caching: bool | None = None,
) -> LintReport:
    """Lint a vLLM launch against a model profile. Never raises on odd input: reports it."""
    prof = load_profile(profile)
    src = prof.get("sources") or {}
    recipe = src.get("recipe") or src.get("vllm_docker")
    lint = prof.get("lint") or {}
    p = parse_launch(argv)
    env = dict(env or {})
    out: list[LintFinding] = []
    inter = {"gpu_count": gpu_count, "rdma_devices": list(rdma_devices or []), "nvlink": nvlink, "mnnvl": mnnvl}
    if not p.raw:
        out.append(
            LintFinding(
                "warning",
                "(launch)",
                "No launch command in the evidence: nothing to lint. Pass the "
                "exact command (launch.argv) to runbook 01.",
                None,
            )
        )
        return LintReport(profile, p, out, inter)
    if p.entry is None and p.flags and not p.model:
        out.append(
            LintFinding(
                "info",
                "(entry)",
                "Bare flags (e.g. a container CMD under the vllm serve "
                "entrypoint); the model is not named on the command line.",
                None,
            )
        )
    if p.has("--config"):
        out.append(
            LintFinding(
                "info",
                "--config",
                "Flags in the --config file are not read by this lint; findings about missing flags may be wrong.",
                None,
            )
        )

    # Required flags (tool-call and reasoning parsers, auto tool choice).
    for req in lint.get("required_flags") or []:
        flag, want = req["flag"], req.get("value")
        have = p.get(flag)
        if have is None:
            out.append(LintFinding("error", flag, f"Missing. {req['why']}", recipe, f"{flag} {want}" if want else flag))
        elif want is not None and str(have) != str(want):
            out.append(
                LintFinding(
                    "error",
                    flag,
                    f"Set to {have!r}, the profile needs {want!r}. {req['why']}",
                    recipe,
                    f"{flag} {want}",
                )
            )
        else:
            out.append(LintFinding("ok", flag, f"{p.spelled(flag)} as the profile needs.", recipe))
    if p.has("--enable-auto-tool-choice") and not p.has("--tool-call-parser"):
        out.append(
            LintFinding(
                "error",
                "--tool-call-parser",
                "--enable-auto-tool-choice needs a --tool-call-parser; vLLM refuses to start without one.",
                src.get("vllm_docker"),
            )
        )

    # Prefix caching.
    pc = lint.get("prefix_caching") or {}
    if pc:
        on_flag, off = p.has("--enable-prefix-caching"), p.has("--no-enable-prefix-caching")
        effective = True if on_flag else False if off else bool(pc.get("default_on"))
        state = "on" if effective else "off"
        how = "explicitly" if (on_flag or off) else "by the profile's default"
        if want_prefix_caching is True and not effective:
            out.append(
                LintFinding(
                    "warning",
                    "--enable-prefix-caching",
                    f"Prefix caching is wanted but {state} {how}. {pc.get('why', '')}",
                    recipe,
                    "--enable-prefix-caching",
                )
            )
        elif want_prefix_caching is False and effective:
            out.append(
                LintFinding(
                    "info",
                    "--enable-prefix-caching",
                    f"Prefix caching is {state} {how} although not wanted.",
                    recipe,
                    "--no-enable-prefix-caching",
                )
            )
        else:
            out.append(
                LintFinding(
                    "info" if want_prefix_caching is None else "ok",
                    "--enable-prefix-caching",
                    f"Prefix caching {state} {how}. {pc.get('why', '')}".strip(),
                    recipe,
                )
            )

    # Parallel sizes vs GPU count.
    tp, pp = p.int_of("--tensor-parallel-size"), p.int_of("--pipeline-parallel-size")
    dp = p.int_of("--data-parallel-size")
    world = tp * pp * dp
    ep = p.has("--enable-expert-parallel")
    multi = _multi_node(p, world, gpu_count)
    if gpu_count is not None:
        if tp > gpu_count:
            out.append(
                LintFinding(
                    "error",
                    "--tensor-parallel-size",
                    f"TP {tp} > {gpu_count} GPUs on this host: "
                    "tensor parallelism spans nodes only with a multi-node setup and is slow over "
                    "the network; keep TP within a node.",
                    recipe,
                )
            )
        elif world > gpu_count and not (p.int_of("--nnodes", 1) > 1 or p.has("--data-parallel-size-local")):
            out.append(
                LintFinding(
                    "warning",
                    "--tensor-parallel-size",
                    f"TP {tp} x PP {pp} x DP {dp} = {world} "
                    f"GPUs but this host has {gpu_count}; no multi-node flags (--nnodes, "
                    "--data-parallel-size-local) are set.",
                    recipe,
                )
            )
        elif p.int_of("--nnodes", 1) > 1:
            nodes = p.int_of("--nnodes", 1)
            sev = "ok" if world <= gpu_count * nodes else "error"
            out.append(
                LintFinding(
                    sev,
                    "--nnodes",
                    f"TP {tp} x PP {pp} x DP {dp} = {world} GPUs over {nodes} "
                    f"nodes of {gpu_count} GPUs ({gpu_count * nodes} in all).",
                    recipe,
                )
            )
        elif world <= gpu_count and gpu_count % max(world, 1) == 0:
            out.append(
                LintFinding(
                    "ok",
                    "--tensor-parallel-size",
                    f"TP {tp} x PP {pp} x DP {dp} = {world} fits {gpu_count} GPUs.",
                    recipe,
                )
            )
    mins = (prof.get("gpus") or {}).get("min_count") or {}
    if mins:
        need = mins.get("dep") if dp > 1 else mins.get("tp_pp") if pp > 1 else mins.get("tp")
        if need and world < need:
            strategy = "DEP" if dp > 1 else "TP+PP" if pp > 1 else "TP/TEP"
            out.append(
                LintFinding(
                    "error",
                    "--tensor-parallel-size",
                    f"{strategy} over {world} GPUs is below the recipe minimum of {need} GPUs for {strategy}.",
                    (prof.get("gpus") or {}).get("source"),
                )
            )
    epl = lint.get("expert_parallel") or {}
    if epl and dp > 1 and not ep:
        out.append(
            LintFinding(
                "warning",
                "--enable-expert-parallel",
                f"DP {dp} without expert parallelism. {epl['why']}",
                recipe,
                "--enable-expert-parallel",
            )
        )
    if epl and dp > 1 and ep and multi and not p.has(epl.get("multi_node_dep_flag", "")):
        out.append(
            LintFinding(
                "info", epl["multi_node_dep_flag"], f"Multi-node DEP. {epl['why']}", recipe, epl["multi_node_dep_flag"]
            )
        )

    # All-to-all backend vs interconnect.
    a2a = lint.get("all2all") or {}
    backend = p.get("--all2all-backend")
    if isinstance(backend, str) and backend not in ALL2ALL_BACKENDS:
        out.append(
            LintFinding(
                "error",
                "--all2all-backend",
                f"{backend!r} is not a vLLM all-to-all backend (valid: {', '.join(ALL2ALL_BACKENDS)}).",
                src.get("vllm_parallel_config"),
            )
        )
    if a2a.get("rdma") or a2a.get("nvlink"):
        if mnnvl:
            want, fabric = a2a.get("mnnvl"), "multi-node NVLink"
        elif multi and rdma_devices:
            want, fabric = a2a.get("rdma"), "RDMA between nodes"
        elif multi is False and nvlink == "active":
            want, fabric = a2a.get("nvlink"), "NVLink within the node"
        elif multi and nvlink == "active" and not rdma_devices:
            want, fabric = None, "NVLink in-node but no RDMA device found for the cross-node path"
        else:
            want, fabric = None, "interconnect not established"
        if not ep and not backend:
            out.append(
                LintFinding(
                    "info",
                    "--all2all-backend",
                    "Expert parallelism is off; the all-to-all backend does not apply.",
                    recipe,
                )
            )
        elif want is None:
            out.append(
                LintFinding(
                    "warning" if multi else "info",
                    "--all2all-backend",
                    f"Cannot pick the backend: {fabric} (evidence: nvlink={nvlink}, mnnvl={mnnvl}, "
                    f"rdma={len(rdma_devices or [])} device(s)). {a2a.get('why', '')}",
                    recipe,
                )
            )
        elif backend is None:
            out.append(
                LintFinding(
                    "warning",
                    "--all2all-backend",
                    f"Not set (vLLM default {ALL2ALL_DEFAULT}); "
                    f"over {fabric} the recipe uses {want}. {a2a.get('why', '')}",
                    recipe,
                    f"--all2all-backend {want}",
                )
            )
        elif backend != want:
            out.append(
                LintFinding(
                    "warning",
                    "--all2all-backend",
                    f"{backend} does not match the interconnect ({fabric}); the recipe uses {want}.",
                    recipe,
                    f"--all2all-backend {want}",
                )
            )
        else:
            out.append(LintFinding("ok", "--all2all-backend", f"{backend} matches {fabric}.", recipe))

    # NCCL env on NVL systems.
    nvl_env = lint.get("nvl_env") or {}
    if nvl_env and mnnvl:
        for k, v in nvl_env.items():
            have = env.get(k)
            if have != str(v):
                out.append(
                    LintFinding(
                        "warning",
                        k,
                        f"{'Not set' if have is None else f'Set to {have!r}'} on a "
                        f"multi-node NVLink system; {lint.get('nvl_env_why', '')}",
                        recipe,
                        f"{k}={v}",
                    )
                )
            else:
                out.append(LintFinding("ok", k, f"{k}={v} as the recipe sets on NVL systems.", recipe))
    elif nvl_env and mnnvl is None:
        out.append(
            LintFinding(
                "info",
                "NCCL_MNNVL_ENABLE",
                "Multi-node NVLink state unknown; on NVL systems the "
                f"recipe sets {', '.join(f'{k}={v}' for k, v in nvl_env.items())}.",
                recipe,
            )
        )
    return LintReport(profile, p, out, inter)


def lint_inputs(inputs: CompatInputs, want_prefix_caching: bool | None = None) -> LintReport:
    """Lint the launch recorded in CompatInputs (argv, env, interconnect from evidence)."""
    env = {**inputs.launch_env, **inputs.nccl_env}
    return lint_launch(
        inputs.launch_argv,
        profile=inputs.model_profile,
        gpu_count=inputs.gpu_count,
        env=env,
        rdma_devices=inputs.rdma_devices,
        nvlink=inputs.nvlink,
        mnnvl=inputs.mnnvl,
        want_prefix_caching=want_prefix_caching,
    )
