"""What runs ON each node of a Ray survey: the stdlib probe, and the bundle sent back as bytes.

Standard library only, and shipped by value (the Ray runner registers this module with
cloudpickle), so a node needs nothing but the Python its Ray worker runs: the probe script is the
same single file ``vllm-runbooks probe --write-script`` writes (redaction inlined), passed in as
text. The bundle comes back as a gzip tarball, capped in size; the driver never extracts it (the
evidence package reads tarballs in place).

TEST SEAM — not a product option. A Ray node started with the environment variable
``VLLM_RUNBOOKS_FLEET_TEST_SEAM`` set to JSON ``{"bundle": DIR, "hold_s": S, "started": FILE}``
does not probe its machine: it answers with a copy of the bundle DIR, redacted by the probe's own
code (after touching FILE and holding S seconds, so a test can kill it midway). Tests use it to
make several Ray nodes on one machine present different sample incidents. The answer says
``simulated: true`` and the fleet table marks that node's source ``simulated``, so such a bundle is
never mistaken for real
evidence. Nothing in the CLI or the runbook sets it.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

TEST_SEAM_ENV = "VLLM_RUNBOOKS_FLEET_TEST_SEAM"
MAX_BUNDLE_BYTES = 64 * 1024 * 1024  # compressed bundle sent back to the driver
MAX_HOLD_S = 600.0


def _tar_bytes(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not p.is_symlink():
                tf.add(str(p), arcname=f"bundle/{p.relative_to(folder).as_posix()}", recursive=False)
            if buf.tell() > MAX_BUNDLE_BYTES:
                raise ValueError(f"bundle larger than {MAX_BUNDLE_BYTES} bytes compressed")
    return buf.getvalue()


def _probe_module(script: str) -> Any:
    """The probe script loaded as a module, for its redaction (the same code a real probe runs)."""
    import types

    mod = types.ModuleType("_vllm_runbooks_fleet_probe")
    sys.modules[mod.__name__] = mod  # dataclasses look their module up while the script runs
    exec(compile(script, "probe_node.py", "exec"), mod.__dict__)  # noqa: S102 - our own probe source
    return mod


def _simulate(spec_text: str, out: Path, script: str) -> None:
    """The test seam: a redacted copy of a sample bundle instead of a probe (see the module docstring)."""
    spec = json.loads(spec_text)
    started = spec.get("started")
    if started:
        Path(started).write_text(str(os.getpid()), encoding="utf-8")
    hold = min(float(spec.get("hold_s") or 0.0), MAX_HOLD_S)
    if hold > 0:
        time.sleep(hold)  # the node is "busy probing": lets a test kill it midway or let it time out
    probe = _probe_module(script)
    src = Path(spec["bundle"])
    for path in sorted(src.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != "README.md":
            dest = out / path.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(probe.redact_bytes(path.name, path.read_bytes()))


def probe_task(script: str, args: list[str], timeout_s: float) -> dict[str, Any]:
    """Run the stdlib probe on this node into a temporary folder; return the bundle as gzip bytes.

    Never raises for a probe that fails: the answer carries ``error`` and whatever bundle there is.
    """
    answer: dict[str, Any] = {"hostname": socket.gethostname(), "simulated": False, "error": None, "tar": b""}
    with tempfile.TemporaryDirectory(prefix="vllm-runbooks-fleet-") as tmp:
        out = Path(tmp) / "bundle"
        seam = os.environ.get(TEST_SEAM_ENV)
        if seam:
            answer["simulated"] = True
            _simulate(seam, out, script)
        else:
            probe = Path(tmp) / "probe_node.py"
            probe.write_text(script, encoding="utf-8")
            try:
                proc = subprocess.run(
                    [sys.executable or "python3", "-I", str(probe), "--out", str(out), *args],
                    capture_output=True,
                    timeout=timeout_s,
                    check=False,
                )
                if proc.returncode != 0:
                    answer["error"] = f"probe exited {proc.returncode}: {proc.stderr.decode('utf-8', 'replace')[-400:]}"
            except subprocess.TimeoutExpired:
                answer["error"] = f"probe did not finish within {timeout_s:g}s"
        if out.is_dir():
            answer["tar"] = _tar_bytes(out)
    return answer
