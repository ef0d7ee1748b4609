"""Issue 8: hostile bundles and logs — every input bounded, every problem a finding, never a crash."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tracemalloc
from pathlib import Path

import pytest

from ci_rules import need_module
from conftest import R575
from vllm_runbooks import probe
from vllm_runbooks.cli import main
from vllm_runbooks.evidence import collect_evidence

DRIVER_LINE = "RuntimeError: The NVIDIA driver on your system is too old (found version 12080)."


class Endless(io.RawIOBase):
    """``size`` bytes of one byte value, produced on demand (a 1 GiB member without holding it)."""

    def __init__(self, size: int, byte: bytes = b"a") -> None:
        self.left, self.byte = size, byte

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[no-untyped-def]
        n = min(len(buf), self.left)
        buf[:n] = self.byte * n
        self.left -= n
        return n


def _bundle(tmp_path: Path) -> Path:
    b = tmp_path / "bundle"
    shutil.copytree(R575, b)
    return b


def _evidence(run: Path) -> dict:
    path = run / "evidence" / "evidence.json"
    assert path.stat().st_size > 0
    return json.loads(path.read_text(encoding="utf-8"))


def test_line_without_newline_is_read_in_bounded_memory(tmp_path: Path) -> None:
    stream = io.BufferedReader(Endless(256 * 1024 * 1024))
    tracemalloc.start()
    try:
        summary = probe.store_log(stream, tmp_path / "out.log")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 1024 * 1024, peak
    assert summary["bytes"] == 256 * 1024 * 1024 and summary["lines"] == 1
    text = (tmp_path / "out.log").read_text()
    assert "line cut at 0 of" in text and "aaaa" not in text


def test_read_bound_keeps_head_and_tail_of_a_plain_file(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with log.open("w") as f:
        f.write("HEAD first line\n")
        f.writelines(f"INFO filler line {i}\n" for i in range(200_000))
        f.write(DRIVER_LINE + "\n")
    with probe.open_log_stream(log) as stream:
        summary = probe.store_log(stream, tmp_path / "out.log", cap_bytes=64 * 1024, max_read_bytes=100_000)
    out = (tmp_path / "out.log").read_text()
    assert out.startswith("HEAD first line") and DRIVER_LINE in out
    assert "read stopped after 100000 bytes" in summary["stopped"] and "tail" in summary["stopped"]
    assert summary["truncated"] and summary["unread_bytes"] > 0


def test_huge_log_beside_the_real_one_does_not_cost_the_logs_item(tmp_path: Path) -> None:
    b = _bundle(tmp_path)
    (b / "logs").mkdir(exist_ok=True)
    with (b / "logs" / "huge.log").open("wb") as f:  # 1 GiB, sparse: no disk, no newline
        f.truncate(1024**3)
    ev = collect_evidence(b, run_dir=tmp_path / "run", only=["logs"], collector_timeout_s=8)
    item = ev.items["logs"]
    assert item.status != "unavailable", item.reason
    files = {f["name"]: f for f in item.value["files"]}
    assert files["huge.log"]["stopped"] and "read stopped" in files["huge.log"]["stopped"]
    stored = (tmp_path / "run" / "evidence" / files["container-logs.txt"]["stored_as"]).read_text()
    assert "driver on your system is too old" in stored


def test_truncated_tarball_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    tgz = tmp_path / "bundle.tar.gz"
    with tarfile.open(tgz, "w:gz") as tf:
        for p in sorted(R575.rglob("*")):
            if p.is_file():
                tf.add(p, arcname=f"node/{p.relative_to(R575)}")
        info = tarfile.TarInfo("node/logs/zz-noise.log")
        noise = os.urandom(400_000)
        info.size = len(noise)
        tf.addfile(info, io.BytesIO(noise))
    data = tgz.read_bytes()
    tgz.write_bytes(data[: len(data) - 200_000])  # the copy was interrupted
    collect_evidence(tgz, run_dir=tmp_path / "run")
    ev = _evidence(tmp_path / "run")
    findings = " ".join(ev["items"]["source"]["value"]["findings"])
    assert "ends early" in findings
    assert ev["items"]["nvidia"]["status"] != "unavailable"


@pytest.mark.parametrize("as_tar", [False, True])
def test_non_utf8_names_are_replaced_and_evidence_is_written(tmp_path: Path, as_tar: bool) -> None:
    b = _bundle(tmp_path)
    (b / "logs").mkdir(exist_ok=True)
    bad = os.fsencode(b / "logs") + b"/serve-\xff\xfe.log"
    with open(bad, "wb") as f:
        f.write(DRIVER_LINE.encode() + b"\n")
    source: Path = b
    if as_tar:
        source = tmp_path / "b.tar"
        with tarfile.open(source, "w", encoding="utf-8", errors="surrogateescape") as tf:
            tf.add(b, arcname="b")
    collect_evidence(source, run_dir=tmp_path / "run")
    ev = _evidence(tmp_path / "run")
    names = [f["name"] for f in ev["items"]["logs"]["value"]["files"]]
    assert "serve-\ufffd\ufffd.log" in names
    assert (tmp_path / "run" / "evidence" / "SHA256SUMS").stat().st_size > 0


def test_fifos_and_file_count_are_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_runbooks.evidence import sources

    b = _bundle(tmp_path)
    os.mkfifo(b / "logs-pipe.log")
    monkeypatch.setattr(sources, "MAX_MEMBERS", 12)
    collect_evidence(b, run_dir=tmp_path / "run", only=["host"])
    findings = " ".join(_evidence(tmp_path / "run")["items"]["source"]["value"]["findings"])
    assert "logs-pipe.log: not a regular file (FIFO)" in findings or "more than 12 files" in findings
    assert "more than 12 files" in findings
    monkeypatch.setattr(sources, "MAX_MEMBERS", 20_000)
    collect_evidence(b, run_dir=tmp_path / "run2", only=["host"])
    assert "logs-pipe.log: not a regular file (FIFO)" in " ".join(
        _evidence(tmp_path / "run2")["items"]["source"]["value"]["findings"]
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"captures": [1, 2]}', "'captures' is a list"),
        ('{"captures": {"env.txt": 5}}', "captures['env.txt'] is a int"),
    ],
)
def test_hostile_probe_json_is_ignored_with_the_reason(tmp_path: Path, content: str, why: str) -> None:
    b = _bundle(tmp_path)
    (b / "probe.json").write_text(content)
    (b / "image-inspect.json").unlink()
    collect_evidence(b, run_dir=tmp_path / "run")
    ev = _evidence(tmp_path / "run")
    findings = " ".join(ev["items"]["source"]["value"]["findings"])
    assert f"probe.json ignored: {why}" in findings
    crashed = [k for k, it in ev["items"].items() if "Error" in (it.get("reason") or "")]
    assert not crashed, crashed


def test_xz_bz2_zstd_logs_are_decompressed_and_a_damaged_zstd_said(tmp_path: Path) -> None:
    zstandard = need_module("zstandard")
    b = _bundle(tmp_path)
    (b / "logs").mkdir(exist_ok=True)
    line = (DRIVER_LINE + "\n").encode()
    (b / "logs" / "a.log.xz").write_bytes(lzma.compress(line))
    (b / "logs" / "b.log.bz2").write_bytes(bz2.compress(line))
    (b / "logs" / "c.log.gz").write_bytes(gzip.compress(line))
    (b / "logs" / "d.log.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 32)
    (b / "logs" / "e.log.zst").write_bytes(zstandard.ZstdCompressor().compress(line * 100))
    (b / "logs" / "f.log").write_bytes(b"BZh is how this plain log starts\n" + line)
    ev = collect_evidence(b, run_dir=tmp_path / "run", only=["logs"])
    item = ev.items["logs"]
    files = {f["name"]: f for f in item.value["files"]}
    for name in ("a.log.xz", "b.log.bz2", "c.log.gz", "e.log.zst", "f.log"):
        assert DRIVER_LINE in (tmp_path / "run" / "evidence" / files[name]["stored_as"]).read_text(), name
    assert "zstd stream ends after 0 bytes" in files["d.log.zst"]["stopped"]


def test_zstd_log_refused_where_zstandard_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # the single-file probe on a bare node
    b = _bundle(tmp_path)
    (b / "logs").mkdir(exist_ok=True)
    (b / "logs" / "d.log.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 32)
    ev = collect_evidence(b, run_dir=tmp_path / "run", only=["logs"])
    item = ev.items["logs"]
    assert "d.log.zst" not in {f["name"] for f in item.value["files"]}
    assert "zstandard package is not installed" in (item.reason or "")


def test_write_script_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "probe_node.py"
    target.write_text("mine")
    assert main(["probe", "--write-script", str(target)]) == 2
    assert target.read_text() == "mine" and "never written over" in capsys.readouterr().err


def test_sigterm_during_log_capture_leaves_no_temporary_file(tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "evidence"
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from vllm_runbooks.evidence.registry import Context\n"
        "from vllm_runbooks.evidence.sources import Source\n"
        "from vllm_runbooks.probe import Options\n"
        "class S:\n"
        "    def readline(self, n=-1):\n"
        "        print('reading', flush=True)\n"
        "        return sys.stdin.buffer.readline(n)\n"
        f"ctx = Context(Source(), Options(), Path({str(out)!r}))\n"
        "ctx.keep_log('raw/logs/x.log', S())\n"
    )
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=False
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == b"reading"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    proc.stdin.close()
    leftovers = [p for p in [*tmpdir.rglob("*"), *out.rglob("*")] if p.is_file()]
    assert not leftovers, leftovers


def test_check_compat_refuses_instead_of_tracebacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-compat"]) == 2
    assert main(["check-compat", "--profile", "foo", "--image-cuda", "13.0", "--driver", "580.95.05"]) == 2
    assert "unknown profile 'foo'" in capsys.readouterr().err
    (tmp_path / "evidence").mkdir()
    for content in ("[1, 2]", '{"schema": "evidence", "items": {"nvidia": [1], "image": "x"}}'):
        (tmp_path / "evidence" / "evidence.json").write_text(content)
        assert main(["check-compat", "--evidence", str(tmp_path)]) == 2


def test_versions_take_ascii_digits_and_plausible_compute_capability() -> None:
    from vllm_runbooks.compat.facts import parse_compute_capability, parse_cuda_version, parse_driver_version

    assert parse_cuda_version("１３.０")[0] is None
    assert parse_driver_version("５８０.９５.０５")[0] is None
    assert parse_compute_capability("99999999999999999999.0")[0] is None
    assert parse_compute_capability("9.0")[0] == (9, 0)


def test_probe_tar_never_replaces_an_existing_tarball(tmp_path: Path) -> None:
    (tmp_path / "b.tar.gz").write_bytes(b"earlier bundle")
    with pytest.raises(FileExistsError, match="never overwrites"):
        probe.write_bundle(tmp_path / "b", probe.Options(), make_tar=True)
    assert (tmp_path / "b.tar.gz").read_bytes() == b"earlier bundle"


def test_probe_runs_captures_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    both = threading.Barrier(2, timeout=20)  # passes only if the two captures run at the same time

    def capture(name: str, opts: probe.Options) -> probe.Captured:
        if name in ("uname.txt", "nproc.txt"):
            both.wait()
            return probe.Captured(name, "ok", data=b"x")
        return probe.Captured(name, "unavailable", reason="not in this test")

    monkeypatch.setattr(probe, "capture", capture)
    meta = probe.write_bundle(tmp_path / "b", probe.Options())
    assert meta["captures"]["uname.txt"]["status"] == "ok" and meta["captures"]["nproc.txt"]["status"] == "ok"


def test_stray_begin_private_key_line_does_not_hide_the_incident(tmp_path: Path) -> None:
    from vllm_runbooks.logs import diagnose_log

    b = _bundle(tmp_path)
    logs = (b / "container-logs.txt").read_text(encoding="utf-8")
    (b / "container-logs.txt").write_text(
        "INFO loading TLS material: -----BEGIN PRIVATE KEY----- (no END line follows)\n" + logs, encoding="utf-8"
    )
    ev = collect_evidence(b, run_dir=tmp_path / "run", only=["logs"])
    stored = tmp_path / "run" / "evidence" / ev.items["logs"].value["files"][0]["stored_as"]
    assert diagnose_log(stored).label == "driver_too_old"


@pytest.mark.parametrize("bad", [-5, 0, 10**9, float("nan"), True])
def test_collector_timeout_is_bounded_in_the_library_too(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ValueError, match="collector_timeout_s"):
        collect_evidence(R575, run_dir=tmp_path / "run", collector_timeout_s=bad)
