"""The baseline section: what was on record before the change (driver, kernel, image, canary).

Why its own concern: a rollback needs the old state on record; each item cites runbook 01's
typed evidence or runbook 03's canary of the baseline run, or says why it is not on record.
"""

from __future__ import annotations

from typing import Any

from .cite import Cite
from .compare import canary_steps
from .hardware import BASELINE_PICKS
from .model import NO_BASELINE, BaselineItem
from .options import RecordOptions
from .readings import step_file
from .sources import RunView


def _identity(view: RunView) -> dict[str, str | None]:
    """What must match between a baseline and the run: the model profile, the host, the GPU model."""
    from .board import record_profile

    evidence, _ = view.evidence()
    gpus = evidence.get("nvidia", "gpus") if evidence is not None else None
    return {
        "model profile": record_profile(view) or None,
        "host": evidence.get("host", "hostname") if evidence is not None else None,
        "GPU model": (gpus[0].get("name") if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict) else None),
    }


def baseline_mismatch(base: RunView, run: RunView) -> list[str]:
    """Why ``base`` is not the state before *this* change (another node, GPU or model profile); [] when usable.

    Only facts both runs recorded are compared: a value one run lacks is not a mismatch.
    """
    before, after = _identity(base), _identity(run)
    return [
        f"{what}: baseline {before[what]!r}, this run {after[what]!r}"
        for what in before
        if before[what] and after[what] and before[what] != after[what]
    ]


def evidence_item(view: RunView, name: str) -> tuple[Any, str]:
    """Runbook 01's typed Evidence when its ``name`` section holds a value, else (None, why)."""
    evidence, why = view.evidence()
    if evidence is None:
        return None, f"{why} in the baseline run"
    if name not in evidence.items:
        return None, f"evidence has no {name!r} section"
    if evidence.status(name) not in ("ok", "partial"):
        return None, f"evidence {name}: {evidence.status(name)} ({evidence.item(name).reason or 'no reason recorded'})"
    return evidence, ""


def _interconnect(ev: Any) -> str | None:
    value = ev.get("interconnect")
    return ", ".join(k for k, x in value.items() if x) or None if isinstance(value, dict) else None


def _runtime(ev: Any) -> str | None:
    return ev.get("container_runtime", "nvidia_ctk_version") or ev.get("container_runtime", "docker_version")


def _gpus(ev: Any) -> str | None:
    gpus = ev.get("nvidia", "gpus")
    return f"{len(gpus)} GPU(s)" if isinstance(gpus, list) and gpus else None


def baseline_items(base: RunView | None, cite: Cite | None, opts: RecordOptions, words: dict) -> list[BaselineItem]:
    """The baseline section: each old-state item cited from the baseline run, or why it is not on record."""
    texts = words["baseline"]
    out: list[BaselineItem] = []
    if base is None or cite is None:
        for key, text in texts.items():
            if key == "rollback" and opts.rollback_store:
                out.append(BaselineItem(key, text, True, f"kept at: {opts.rollback_store} (parameter rollback_store)"))
            else:
                out.append(BaselineItem(key, text, False, NO_BASELINE))
        return out
    rel = base.result_file("evidence_capture")
    checks = {  # section → what to read from the typed Evidence (Evidence.get)
        "driver": ("nvidia", lambda ev: ev.get("nvidia", "driver_version")),
        "kernel": ("host", lambda ev: ev.get("host", "kernel")),
        "gpu_state": ("nvidia", _gpus),
        "runtime": ("container_runtime", _runtime),
        "interconnect": ("interconnect", _interconnect),
        "image": ("image", lambda ev: ev.get("image", "digest") or ev.get("image", "ref")),
        **BASELINE_PICKS,
    }
    steps = canary_steps(base)
    for key, text in texts.items():
        if key in checks:
            section, pick = checks[key]
            value, why = evidence_item(base, section)
            got = pick(value) if value else None
            if got and rel and rel in base.manifest:
                out.append(BaselineItem(key, text, True, "", [cite("evidence_capture", rel, f"items.{section}", got)]))
            else:
                out.append(BaselineItem(key, text, False, why or f"evidence {section} has no value for it"))
        elif key in ("inference_check", "communication_check"):
            name = "short_text" if key == "inference_check" else "multi_gpu"
            step = steps.get(name)
            rel = step_file(base, name)
            if step and step.status in ("pass", "fail") and rel:
                ev = [cite("canary_validation", rel, f"step {name}", step.status.value)]
                out.append(BaselineItem(key, text, True, "", ev))
            elif step:
                out.append(BaselineItem(key, text, False, f"canary step {name} skipped in the baseline: {step.reason}"))
            else:
                out.append(BaselineItem(key, text, False, "runbook 03 (canary) did not run in the baseline"))
        elif key == "rollback":
            if opts.rollback_store:
                out.append(BaselineItem(key, text, True, f"kept at: {opts.rollback_store} (parameter rollback_store)"))
            else:
                out.append(
                    BaselineItem(
                        key,
                        text,
                        False,
                        "parameter rollback_store not given: where the old driver, image and config are kept "
                        "is not on record",
                    )
                )
    return out
