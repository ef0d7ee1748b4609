"""The single-file probe: written with redact inlined, run by a plain interpreter where the
package is not importable, and read back as a bundle."""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from vllm_runbooks import probe
from vllm_runbooks.cli import evidence as cli_evidence
from vllm_runbooks.evidence import collect_evidence

PY = shutil.which("python3") or "/usr/bin/python3"
SECRETS = {"HF_TOKEN": "hf_probeSecretAAAAAAAAAAAAAAAAAAAAAA", "OPENAI_API_KEY": "sk-probeSecretBBBBBBBBBBBBBBBB"}


def _plain_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p)
    return env


def test_single_file_probe_runs_with_stdlib_only(tmp_path: Path) -> None:
    script = probe.write_script(tmp_path / "probe_node.py")
    assert (
        "from vllm_runbooks import"
        not in script.read_text().split("END-SHARED-INLINED")[0].split("BEGIN-SHARED-INLINED")[1]
    )
    text = b"INFO up\nERROR failed --api-key sk-logSecretCCCCCCCCCCCCCCCC\n"
    log = tmp_path / "serve.log.gz"
    log.write_bytes(gzip.compress(text))
    # the inlined compression module reads every stdlib format, by magic bytes not by name
    (tmp_path / "xz.log").write_bytes(lzma.compress(text.replace(b"up", b"xz-up")))
    (tmp_path / "b.log.bz2").write_bytes(bz2.compress(text.replace(b"up", b"bz2-up")))
    (tmp_path / "z.log.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 32)  # zstd: refused or said damaged
    env = {**_plain_env(), **SECRETS, "NCCL_DEBUG": "INFO", "NCCL_TOKEN": "nccltok123"}
    # the package must not be importable for this interpreter
    check = subprocess.run([PY, "-I", "-c", "import vllm_runbooks"], capture_output=True, cwd=tmp_path, env=env)
    assert check.returncode != 0
    launch = f"vllm serve m --api-key {SECRETS['OPENAI_API_KEY']} --hf-token=hf_zzzzzzzzzzzzzzzzzzzzzzzz"
    logs = [x for name in (log.name, "xz.log", "b.log.bz2", "z.log.zst") for x in ("--log", str(tmp_path / name))]
    cmd = [PY, "-I", str(script), "--out", "bundle", *logs, "--timeout", "5", "--launch-command", launch]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    b = tmp_path / "bundle"
    meta = json.loads((b / "probe.json").read_text())
    assert meta["captures"]["uname.txt"]["status"] == "ok"
    assert meta["captures"]["image-inspect.json"]["reason"] == "no image given"
    assert (b / "logs" / "serve.log").read_text().startswith("INFO up\n")
    stored = {Path(k).name: v for k, v in meta["logs"].items()}
    assert (b / "logs" / "xz.log").read_text().startswith("INFO xz-up\n"), stored
    assert (b / "logs" / "b.log").read_text().startswith("INFO bz2-up\n"), stored
    zst = json.dumps(stored["z.log"])
    assert "zstandard package is not installed" in zst or "zstd stream ends" in zst, zst
    assert "NCCL_DEBUG=INFO" in (b / "env.txt").read_text()
    blob = b"".join(p.read_bytes() for p in b.rglob("*") if p.is_file()) + res.stdout.encode()
    for s in [*SECRETS.values(), "sk-logSecretCCCC", "hf_zzzzzzzzzzzzzzzz", "nccltok123"]:
        assert s.encode() not in blob, s
    # and the library reads what the stdlib probe wrote
    ev = collect_evidence(b, run_dir=tmp_path / "run")
    assert ev.get("host", "kernel") and ev.get("launch", "origin") == "bundle"
    assert ev.get("logs", "files")[0]["first_errors"][0]["line"] == 2


def test_plain_copy_refuses_without_shared_modules_and_works_with_siblings(tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(probe.__file__, alone / "probe.py")
    res = subprocess.run(
        [PY, "-I", "probe.py", "--out", "b"], capture_output=True, text=True, cwd=alone, env=_plain_env(), timeout=60
    )
    assert res.returncode == 2 and "Refusing to write an unredacted bundle" in res.stderr
    assert not (alone / "b").exists()
    shutil.copy(Path(probe.__file__).parent / "redact.py", alone / "redact.py")
    res = subprocess.run(
        [PY, "-I", "probe.py", "--out", "b"], capture_output=True, text=True, cwd=alone, env=_plain_env(), timeout=60
    )
    assert res.returncode == 2 and "compression.py not found" in res.stderr
    shutil.copy(Path(probe.__file__).parent / "compression.py", alone / "compression.py")
    res = subprocess.run(
        [PY, "-I", "probe.py", "--out", "b", "--timeout", "5"],
        capture_output=True,
        text=True,
        cwd=alone,
        env=_plain_env(),
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert (alone / "b" / "probe.json").is_file()
    res = subprocess.run(
        [PY, "-I", "probe.py", "--out", "b"], capture_output=True, text=True, cwd=alone, env=_plain_env(), timeout=60
    )
    assert res.returncode == 2 and "never overwrites" in res.stderr


def test_cli_register_probe_and_write_script(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="vllm-runbooks")
    sub = parser.add_subparsers(dest="cmd")
    cli_evidence.register(sub)
    args = parser.parse_args(["probe", "--write-script", str(tmp_path / "p.py")])
    assert args.func(args) == 0 and (tmp_path / "p.py").is_file()
    args = parser.parse_args(["probe", "--out", str(tmp_path / "b"), "--timeout", "5", "--tar"])
    assert args.func(args) == 0
    assert (tmp_path / "b.tar.gz").is_file() and (tmp_path / "b" / "probe.json").is_file()
    args = parser.parse_args(["probe"])
    assert args.func(args) == 2


def test_running_vllm_process_is_found_and_redacted(tmp_path: Path) -> None:
    """With no launch command, container or pid, the probe reads a running vLLM server's argv and env."""
    import sys

    secret = "sk-runningProcessSecret0123456789"
    env = {**os.environ, "HF_TOKEN": "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", "NCCL_DEBUG": "WARN"}
    # A stand-in whose command line reads like `vllm serve`; it blocks on stdin until closed.
    fake = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; print('up', flush=True); sys.stdin.read()",
            "vllm",
            "serve",
            "tiny",
            "--api-key",
            secret,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert fake.stdout.readline() == b"up\n"  # type: ignore[union-attr]  # running: its argv is visible
        assert fake.pid in probe.find_vllm_processes()
        ev = collect_evidence("local", run_dir=tmp_path / "run", only=["launch"])
    finally:
        fake.stdin.close()  # type: ignore[union-attr]
        fake.wait(timeout=30)
    launch = ev.items["launch"]
    assert launch.status == "ok", launch.reason
    everything = "".join(p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert "serve" in everything and "auto-detected" in everything
    assert secret not in everything and "hf_runningProcessSecret" not in everything


def test_version_probe_goes_straight_to_the_endpoint_and_never_follows_a_redirect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe's GET /version takes no proxy from the environment and reports a 3xx as it is."""
    import http.server
    import threading

    from vllm_runbooks.probe import http_get_version

    seen: dict[str, list[str]] = {"proxy": [], "endpoint": []}

    def server(name: str, status: int) -> http.server.ThreadingHTTPServer:
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                seen[name].append(self.path)
                self.send_response(status)
                self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        return httpd

    proxy, endpoint = server("proxy", 200), server("endpoint", 302)
    try:
        for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
            monkeypatch.setenv(var, f"http://127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        got = http_get_version(f"http://127.0.0.1:{endpoint.server_address[1]}", 5.0)
    finally:
        proxy.shutdown()
        endpoint.shutdown()
    assert seen == {"proxy": [], "endpoint": ["/version"]}
    assert got.status == "unavailable" and "HTTP 302" in (got.reason or "")
