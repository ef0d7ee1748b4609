"""The probe's cheap version facts (python-env.json) and collect_env as an opt-in deeper capture.

Why: ``python -m vllm.collect_env`` took 7-18 s of a probe's wall time; the versions it was read
for come from version files and dist-info without importing vLLM or torch. The fake target
environment below makes importing either package fail, so a probe that imports them is caught.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from vllm_runbooks import probe
from vllm_runbooks.evidence import collect_evidence

PY = shutil.which("python3") or sys.executable  # a target Python other than the probe's own


def _fake_site(root: Path) -> Path:
    site = root / "site"
    for pkg in ("vllm", "torch"):
        (site / pkg).mkdir(parents=True)
        (site / pkg / "__init__.py").write_text(f"raise RuntimeError('{pkg} was imported')\n")
    (site / "vllm" / "_version.py").write_text(
        "version: str\n__version__ = version = '0.11.2.dev5+gabcdef12'\n__commit_id__ = commit_id = 'abcdef12'\n"
    )
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.9.0+cu129'\ncuda: Optional[str] = '12.9'\ngit_version = 'f00d'\n"
    )
    dist = site / "vllm_fancy-0.11.2.dev5+gabcdef12.dist-info"
    dist.mkdir()
    (dist / "top_level.txt").write_text("vllm\n")
    return site


def test_python_env_read_without_importing_vllm_or_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(_fake_site(tmp_path)))
    got = probe.capture("python-env.json", probe.Options(python=PY))
    assert got.status == "ok", got.reason
    data = json.loads(got.data or b"")
    assert data["vllm"]["version"] == "0.11.2.dev5+gabcdef12"
    assert data["vllm"]["commit"] == "abcdef12"
    assert data["vllm"]["distribution"] == "vllm_fancy"
    assert data["torch"]["version"] == "2.9.0+cu129" and data["torch"]["cuda"] == "12.9"
    assert got.argv[0] == PY


def test_collect_env_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], float]] = []

    def fake_run(argv: list[str], timeout_s: float, stdout_path: Path | None = None) -> probe.Captured:
        calls.append((argv, timeout_s))
        return probe.Captured(argv[0], "ok", data=b"vLLM Version                 : 0.1.0\n")

    monkeypatch.setattr(probe, "run", fake_run)
    got = probe.capture("collect_env.txt", probe.Options())
    assert got.status == "unavailable" and got.reason.startswith("skipped: not requested (--collect-env)")
    assert calls == []
    args = probe.build_parser().parse_args(["--out", "x", "--collect-env", "--python", PY])
    opts = probe.options_from_args(args)
    assert opts.collect_env and opts.python == PY
    probe.capture("collect_env.txt", opts)
    assert calls and calls[0][0] == [PY, "-m", "vllm.collect_env"] and calls[0][1] >= probe.COLLECT_ENV_TIMEOUT_S


def test_vllm_item_reads_python_env_from_a_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "python-env.json").write_text(
        json.dumps(
            {
                "python": {"version": "3.12.3"},
                "vllm": {"version": "0.11.2", "commit": "abcdef12"},
                "torch": {"version": "2.9.0+cu129", "cuda": "12.9"},
            }
        )
    )
    ev = collect_evidence(str(bundle), run_dir=tmp_path / "run", only=["vllm"])
    item = ev.items["vllm"]
    assert item.status == "ok", item.reason
    assert item.value["version"] == "0.11.2" and item.value["commit"] == "abcdef12"
    assert item.value["sources"]["python_env"] == "0.11.2"
    assert item.value["torch"] == {"version": "2.9.0+cu129", "cuda": "12.9"}
    assert "raw/python-env.json" in item.artefacts
