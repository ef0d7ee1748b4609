"""The survey on Ray: one probe task pinned to each alive node, bounded in time, bundles brought back.

The only module of the product that imports Ray (an optional extra: ``pip install
'vllm-runbooks[fleet]'``). Teams serving large models across nodes already run Ray (vLLM's
multi-node backend, KubeRay), so the fleet is reached through it rather than through anything of
ours. Each alive node gets exactly one task with hard node-affinity scheduling (it runs there or
not at all, never retried elsewhere); every task has the same deadline; a node that dies, times
out or cannot be scheduled becomes an unanswered row with the reason, and never stops the survey.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import nodeprobe
from .bundles import node_name
from .model import WHY_DIED, WHY_NO_PROBE, WHY_TIMED_OUT, NodeRow, unanswered

INSTALL_HINT = "Ray is not installed: pip install 'vllm-runbooks[fleet]' (or: pip install ray)"


@dataclass
class NodeAnswer:
    """A node's bundle as it landed on the driver, or the row saying why there is none."""

    node: str
    bundle: Path | None = None
    simulated: bool = False
    row: NodeRow | None = None


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return ray


def _probe_script() -> str:
    """The single-file stdlib probe (redaction inlined), as ``probe --write-script`` writes it."""
    import tempfile

    from .. import probe

    with tempfile.TemporaryDirectory() as tmp:
        return probe.write_script(Path(tmp) / "probe_node.py").read_text(encoding="utf-8")


def _node_label(info: dict[str, Any]) -> str:
    """hostname-<first 8 of the Ray node id>: readable, and unique when hosts share a name."""
    host = info.get("NodeManagerHostname") or info.get("NodeManagerAddress") or "node"
    return node_name(f"{host}-{str(info.get('NodeID', ''))[:8]}")


def survey(
    address: str,
    fleet_dir: Path,
    *,
    node_timeout_s: float = 120.0,
    probe_args: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[NodeAnswer]:
    """Probe every alive node of the Ray cluster at ``address``; bundles land in ``fleet_dir/<node>/``.

    Connects (or reuses the connection of this process) and disconnects only if it connected.
    """
    ray = _import_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        import ray.cloudpickle as cloudpickle

        cloudpickle.register_pickle_by_value(nodeprobe)  # nodes need not have vllm-runbooks installed
    except (ImportError, AttributeError, ValueError):
        pass
    connected_here = not ray.is_initialized()
    if connected_here:
        if address.startswith("ray://"):  # Ray Client takes fewer options
            ray.init(address=address)
        else:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    say = progress or (lambda _msg: None)
    try:
        script = _probe_script()
        task = ray.remote(num_cpus=0, max_retries=0)(nodeprobe.probe_task)
        alive = [n for n in ray.nodes() if n.get("Alive")]
        say(f"{len(alive)} alive node(s)")
        refs: dict[Any, tuple[str, str]] = {}
        answers: dict[str, NodeAnswer] = {}
        for info in alive:
            label = _node_label(info)
            strategy = NodeAffinitySchedulingStrategy(node_id=info["NodeID"], soft=False)
            ref = task.options(scheduling_strategy=strategy).remote(
                script, list(probe_args or []), max(1.0, node_timeout_s - 5.0)
            )
            refs[ref] = (label, info["NodeID"])
        deadline = time.monotonic() + node_timeout_s
        pending = list(refs)
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done, pending = ray.wait(pending, num_returns=1, timeout=left)
            for ref in done:
                label, node_id = refs[ref]
                answers[label] = _collect(ray, ref, label, node_id, fleet_dir)
                say(f"{label}: {'bundle' if answers[label].bundle else answers[label].row.reason}")  # type: ignore[union-attr]
        for ref in pending:
            label, _ = refs[ref]
            ray.cancel(ref, force=True)
            answers[label] = NodeAnswer(
                label, row=unanswered(label, WHY_TIMED_OUT, f"no answer within {node_timeout_s:g}s; task cancelled")
            )
            say(f"{label}: timed out")
        return [answers[label] for label, _ in refs.values()]
    finally:
        if connected_here:
            ray.shutdown()


def _collect(ray: Any, ref: Any, label: str, node_id: str, fleet_dir: Path) -> NodeAnswer:
    """One finished task: its bundle written to ``fleet_dir/<node>/bundle.tar.gz``, or why not."""
    from ..redact import redact_text

    try:
        answer = ray.get(ref, timeout=0)
    except Exception as exc:  # Ray's errors: the node or worker died, the task could not be placed
        name = type(exc).__name__
        text = redact_text(f"{name}: {exc}".splitlines()[0])[:300]
        if "Unschedulable" in name or "NodeAffinity" in str(exc):
            return NodeAnswer(label, row=unanswered(label, WHY_NO_PROBE, text))
        return NodeAnswer(label, row=unanswered(label, WHY_DIED, text))
    data = answer.get("tar") if isinstance(answer, dict) else None
    if not data:
        why = (answer or {}).get("error") if isinstance(answer, dict) else None
        return NodeAnswer(label, row=unanswered(label, WHY_NO_PROBE, redact_text(why or "the probe wrote no bundle")))
    if len(data) > nodeprobe.MAX_BUNDLE_BYTES:
        return NodeAnswer(label, row=unanswered(label, WHY_NO_PROBE, "bundle over the size cap"))
    node_dir = fleet_dir / label
    node_dir.mkdir(parents=True, exist_ok=False)
    path = node_dir / "bundle.tar.gz"
    with path.open("xb") as handle:
        handle.write(data)
    return NodeAnswer(label, bundle=path, simulated=bool(answer.get("simulated")))
