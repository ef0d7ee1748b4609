"""Bundles (directory and tar.gz) through collect_evidence, the evidence dir, and bad input."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from conftest import R575, R575_PLANTED, R580
from vllm_runbooks import probe
from vllm_runbooks.evidence import Evidence, collect_evidence
from vllm_runbooks.execution.runs import load_result

PLANTED = list(R575_PLANTED)


def all_bytes(root: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_r575_incident_bundle(tmp_path: Path) -> None:
    ev = collect_evidence(R575, run_dir=tmp_path / "run")
    assert ev.verdict() == "complete", ev.unavailable()
    assert ev.get("nvidia", "driver_version") == "575.57.08" and ev.get("nvidia", "driver_branch") == "r575"
    assert ev.get("nvidia", "cuda_driver_version_int") == 12090 and ev.get("nvidia", "source") == "nvidia-smi-xml"
    gpus = ev.get("nvidia", "gpus")
    assert len(gpus) == 8 and {g["compute_capability"] for g in gpus} == {"9.0"}
    assert ev.get("nvidia", "topology")["matrix"][1][0] == "NV18"
    assert ev.get("image", "cuda_version") == "13.0.2" and ev.get("image", "ref") == "vllm/vllm-openai:kimi-k3"
    assert ev.get("container", "exit_code") == 1 and ev.get("vllm", "version") == "0.27.1"
    assert ev.get("container_runtime", "runtimes") == ["io.containerd.runc.v2", "nvidia", "runc"]
    assert ev.get("container_runtime", "nvidia_ctk_version") == "1.17.8"
    launch = ev.items["launch"].value
    assert launch["flags"]["tensor-parallel-size"] == "8" and launch["flags"]["tool-call-parser"] == "kimi_k3"
    assert launch["env"]["HF_TOKEN"] == "<redacted:secret>"
    logs = ev.get("logs", "files")
    assert logs[0]["name"] == "container-logs.txt" and logs[0]["lines"] > 20
    assert any("found version 12090" in e["text"] for e in logs[0]["first_errors"])
    assert ev.get("interconnect", "rdma_devices")[0] == "mlx5_0" and ev.get("interconnect", "nvlink") == "active"
    h = ev.headline().to_dict()
    assert h["runbook"] == "evidence_capture" and h["figures"]["gpus"] == 8 and h["figures"]["image_cuda"] == "13.0.2"
    assert h["figures"]["driver"] == "575.57.08" and h["figures"]["unavailable_count"] == 0
    blob = all_bytes(tmp_path / "run")
    for s in PLANTED:
        assert s.encode() not in blob, s


def test_r580_incident_differs_only_in_driver(tmp_path: Path) -> None:
    a = collect_evidence(R575, run_dir=tmp_path / "a")
    b = collect_evidence(R580, run_dir=tmp_path / "b")
    assert b.get("nvidia", "driver_branch") == "r580" and b.get("nvidia", "cuda_driver_version") == "13.0"
    assert b.get("container", "state") == "running"
    assert a.get("image", "digest") == b.get("image", "digest")
    assert a.get("launch", "argv") == b.get("launch", "argv")
    assert not b.get("logs", "files")[0]["first_errors"]


def _tar(path: Path, members: dict[str, bytes], extra: list[tarfile.TarInfo] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        for ti in extra or []:
            tf.addfile(ti)
    return path


def test_tarball_bundle_read_in_place_and_unsafe_members_rejected(tmp_path: Path) -> None:
    members = {f"node17/{p.name}": p.read_bytes() for p in R575.iterdir() if p.is_file()}
    members["node17/logs/old.log.gz"] = gzip.compress(b"INFO ok\nERROR second log line --api-key zzSecret99\n")
    members["../../escape.txt"] = b"owned"
    members["/etc/abs.txt"] = b"owned"
    link = tarfile.TarInfo("node17/evil-link")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
    tar = _tar(tmp_path / "bundle.tar.gz", members, [link])
    ev = collect_evidence(tar, run_dir=tmp_path / "run")
    assert ev.get("nvidia", "driver_version") == "575.57.08"
    findings = ev.items["source"].value["findings"]
    assert any("escape.txt" in f for f in findings) and any("abs.txt" in f for f in findings)
    assert any("evil-link" in f for f in findings)
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path.parent / "escape.txt").exists()
    names = [f["name"] for f in ev.get("logs", "files")]
    assert "old.log.gz" in names
    stored = (tmp_path / "run" / "evidence" / "raw" / "logs" / "old.log").read_text()
    assert "ERROR second log line" in stored and "zzSecret99" not in stored


def test_missing_and_garbage_bundles_never_crash(tmp_path: Path) -> None:
    ev = collect_evidence(tmp_path / "nope", run_dir=tmp_path / "r1")
    assert ev.verdict() == "empty" and "does not exist" in ev.items["source"].reason
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "nvidia-smi-q.xml").write_bytes(b"\xff\xfe garbage \x00 not xml")
    (bad / "nvidia-smi.txt").write_text("Failed to initialize NVML: Driver/library version mismatch\n")
    (bad / "image-inspect.json").write_text("Error: No such image: vllm/vllm-openai:kimi-k3\n")
    (bad / "os-release").write_bytes(b'NAME="Ubu\xffntu"\n')
    ev = collect_evidence(bad, run_dir=tmp_path / "r2")
    nv = ev.items["nvidia"]
    assert nv.status == "unavailable" and "not nvidia-smi XML" in nv.reason and "version mismatch" in nv.reason
    assert ev.items["image"].status == "unavailable" and "not JSON" in ev.items["image"].reason
    assert ev.items["host"].status == "partial" and "not UTF-8" in ev.items["host"].reason
    assert ev.items["logs"].reason == "no logs in bundle"
    text = json.loads((tmp_path / "r2" / "evidence" / "evidence.json").read_text())
    assert text["schema"] == "evidence" and text["schema_version"] == 1


def test_manifest_load_and_tamper(tmp_path: Path) -> None:
    ev = collect_evidence(R575, run_dir=tmp_path / "run")
    edir = tmp_path / "run" / "evidence"
    assert "raw/nvidia-smi-q.xml" in ev.artefacts and "raw/logs/container-logs.txt" in ev.artefacts
    sums = (edir / "SHA256SUMS").read_text()
    assert "evidence.json" in sums and ev.artefacts["raw/os-release"] in sums
    back = load_result(tmp_path / "run", "evidence_capture")
    assert back.items["nvidia"].value == ev.items["nvidia"].value and back.verdict() == ev.verdict()
    (edir / "raw" / "nvidia-smi.txt").write_text("edited after the fact")
    with pytest.raises(ValueError, match="raw/nvidia-smi.txt"):
        Evidence.load(edir)
    assert Evidence.load(edir, verify=False).source == str(R575)


def test_only_collects_the_collectors_asked_for(tmp_path: Path) -> None:
    ev = collect_evidence(R575, run_dir=tmp_path / "run", only=["nvidia", "host"])
    assert set(ev.items) == {"host", "nvidia"}


def test_never_overwrites_evidence(tmp_path: Path) -> None:
    collect_evidence(R575, run_dir=tmp_path / "run", only=["host"])
    with pytest.raises(FileExistsError):
        collect_evidence(R575, run_dir=tmp_path / "run", only=["host"])


def test_huge_log_keeps_head_and_tail(tmp_path: Path) -> None:
    src = b"".join(f"INFO line {i} padding padding padding\n".encode() for i in range(20000))
    src += b"ERROR the very last line\n"
    summary = probe.store_log(io.BytesIO(src), tmp_path / "x.log", cap_bytes=64 * 1024)
    out = (tmp_path / "x.log").read_bytes()
    assert summary["lines"] == 20001 and summary["bytes"] == len(src) and summary["truncated"]
    assert len(out) < 70 * 1024 and out.startswith(b"INFO line 0 ") and out.endswith(b"ERROR the very last line\n")
    assert b"lines (" in out and b"omitted" in out
    assert summary["first_errors"] == [{"line": 20001, "text": "ERROR the very last line"}]


def test_bundle_copy_with_extra_secrets_everywhere(tmp_path: Path) -> None:
    b = tmp_path / "bundle"
    shutil.copytree(R575, b)
    with open(b / "env.txt", "a") as f:
        f.write("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\nDB_URL=postgres://app:Dbp4ssw0rd@db:5432/x\n")
    (b / "logs").mkdir()
    (b / "logs" / "client.log").write_text(
        "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sigsigsigsig123'\n"
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    )
    collect_evidence(b, run_dir=tmp_path / "run")
    blob = all_bytes(tmp_path / "run")
    for s in [*PLANTED, "ghp_abcdefghijklmnop", "Dbp4ssw0rd", "sigsigsigsig123", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"]:
        assert s.encode() not in blob, s
