"""One override path: the CLI and runbook 02 give the same decision and reasons for every override.

Why: the two once merged overrides their own ways. With the r575 incident's evidence and
``driver_version=535.54.03``, runbook 02 stated "the host driver 535.54.03 offers CUDA 12.9
(reported by the driver …)" — 12.9 belongs to the r575 driver — and a platform owner signs that
reason. Overriding a value must drop what was derived from the old one, in both entry points.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import R575
from vllm_runbooks.cli import main
from vllm_runbooks.compat import CompatInputs, apply_overrides
from vllm_runbooks.compat.stage import Config, run
from vllm_runbooks.evidence.stage import Config as EvidenceConfig
from vllm_runbooks.evidence.stage import run as capture


@pytest.fixture(scope="module")
def r575_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runbook 01 on the r575 sample incident's bundle (the evidence the defect was found with)."""
    run_dir = tmp_path_factory.mktemp("r575") / "run"
    capture(EvidenceConfig(source=str(R575), run_dir=str(run_dir)))
    return run_dir


def _both(run_dir: Path, param: str, value, flags: list[str], capsys) -> tuple:
    """The same override through runbook 02's stage and through ``check-compat``."""
    book = run(Config(evidence_dir=str(run_dir), **{param: value})).report.decision
    capsys.readouterr()
    rc = main(["check-compat", "--evidence", str(run_dir), *flags, "--format", "json"])
    cli = json.loads(capsys.readouterr().out)
    assert rc == 0
    return book, cli


def test_535_driver_does_not_keep_the_r575_driver_cuda(r575_run: Path, capsys) -> None:
    book, cli = _both(r575_run, "driver_version", "535.54.03", ["--driver", "535.54.03"], capsys)
    text = " ".join(book.reasons)
    assert "12.9" not in text, text  # 12.9 is what the r575 driver reported, not 535.54.03
    assert "reported by the driver" not in text and "offers CUDA 12.2" in text
    assert book.inputs.driver_cuda_version is None
    assert "dropped" in book.inputs.derived["driver_cuda_version"]
    assert book.verdict == cli["verdict"] == "driver_too_old"
    assert book.reasons == cli["reasons"]
    if "driver_cuda_version" in book.evidence_used:  # derived from the table for 535, and says so
        assert "toolkit table" in book.evidence_used["driver_cuda_version"]


@pytest.mark.parametrize(
    ("param", "value", "flags"),
    [
        ("image_cuda", "12.8", ["--image-cuda", "12.8"]),
        ("driver_version", "580.95.05", ["--driver", "580.95.05"]),
        ("gpu_name", "NVIDIA A100-SXM4-80GB", ["--gpu", "NVIDIA A100-SXM4-80GB"]),
        ("compute_capability", "8.0", ["--compute-capability", "8.0"]),
        ("brand", "geforce", ["--brand", "geforce"]),
        ("compat_libs", True, ["--compat-libs"]),
        ("compat_libs", False, ["--no-compat-libs"]),
        ("nvidia_require_cuda", "cuda>=12.0", ["--require-cuda", "cuda>=12.0"]),
        ("gpu_count", 4, ["--gpu-count", "4"]),
    ],
)
def test_cli_and_runbook_agree_on_every_override(r575_run: Path, param, value, flags, capsys) -> None:
    book, cli = _both(r575_run, param, value, flags, capsys)
    assert book.verdict == cli["verdict"]
    assert book.reasons == cli["reasons"]
    assert book.missing == cli["missing"]
    assert [r.kind for r in book.risks] == [r["kind"] for r in cli["risks"]]


def test_a_new_gpu_rederives_capability_and_brand_unless_given() -> None:
    base = CompatInputs(gpu_name="NVIDIA H200", driver_version="575.57.08", driver_cuda_version="12.9")
    base.sources.update(gpu_name="nvidia.gpus[0].name", driver_cuda_version="nvidia.cuda_driver_version")
    assert base.compute_capability == "9.0"
    moved = apply_overrides(base, {"gpu_name": "NVIDIA A100-SXM4-80GB"}, origin="cli")
    assert moved.compute_capability == "8.0" and "A100" in moved.derived["compute_capability"]
    assert moved.sources["gpu_name"] == "cli gpu_name"
    kept = apply_overrides(
        CompatInputs(gpu_name="NVIDIA H200"), {"gpu_name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.6"}
    )
    assert kept.compute_capability == "8.6" and kept.sources["compute_capability"] == "parameter compute_capability"
    same = apply_overrides(
        CompatInputs(driver_version="575.57.08", driver_cuda_version="12.9"), {"driver_version": "575.57.08"}
    )
    assert same.driver_cuda_version == "12.9"  # the same driver again: what it reported still holds
