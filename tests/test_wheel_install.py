"""The product installed the way a user installs it: a wheel into a fresh venv, run from elsewhere.

Why: a checkout hides every packaging mistake (templates found beside the code, runs written
into the repository, samples at a relative path). This test builds an sdist from the checkout,
a wheel from that sdist, installs the wheel with its dependencies into a new virtual environment
outside the checkout (not editable; nothing of the repository on ``sys.path``; pip's cache may
be used), and from an unrelated directory runs what a new user runs first, comparing each
answer with the same command run from the checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from vllm_runbooks import __version__

pytestmark = pytest.mark.slow

SAMPLE = "examples/incidents/k3-cu130-on-r575"
CHECKOUT_CLI = [sys.executable, "-m", "vllm_runbooks.cli"]


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH, no overrides of templates or runs."""
    drop = {"PYTHONPATH", "VLLM_RUNBOOKS_TEMPLATES", "VLLM_RUNBOOKS_RUNS", "VIRTUAL_ENV", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


#: Keys whose values are timings: the only thing allowed to differ between two runs of one command.
TIMINGS = {"elapsed_s", "duration_s"}


def _timeless(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: _timeless(v) for k, v in obj.items() if k not in TIMINGS}
    if isinstance(obj, list):
        return [_timeless(v) for v in obj]
    return obj


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build sdist → wheel, install the wheel into a new venv; return the paths."""
    from setuptools import build_meta

    root = tmp_path_factory.mktemp("wheel-install")
    dist = root / "dist"
    dist.mkdir()
    here = Path.cwd()
    try:
        os.chdir(REPO_ROOT)
        sdist = dist / build_meta.build_sdist(str(dist))
    finally:
        os.chdir(here)
    build = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(sdist)],
        root,
        _clean_env(),
    )
    assert build.returncode == 0, build.stderr[-4000:]
    (wheel,) = dist.glob("vllm_runbooks-*.whl")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    install = _run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], root, _clean_env(), timeout=1500)
    assert install.returncode == 0, install.stderr[-4000:]
    work = root / "elsewhere"
    work.mkdir()
    return {"wheel": wheel, "sdist": sdist, "python": python, "cli": env_dir / "bin" / "vllm-runbooks", "work": work}


def _site_package(installed: dict[str, Path]) -> Path:
    code = "import vllm_runbooks, pathlib; print(pathlib.Path(vllm_runbooks.__file__).parent)"
    out = _run([str(installed["python"]), "-c", code], installed["work"], _clean_env())
    return Path(out.stdout.strip())


def _tree(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_the_wheel_carries_runbooks_notebooks_samples_and_data(installed: dict[str, Path]) -> None:
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    templates = {Path(n).name for n in names if n.startswith("vllm_runbooks/shipped/runbooks/")}
    assert {p.name for p in (REPO_ROOT / "runbooks").glob("*.ipynb")} == templates
    assert {"incident_console.ipynb", "run_comparison.ipynb"} <= {
        Path(n).name for n in names if n.startswith("vllm_runbooks/shipped/notebooks/")
    }
    bundle = {Path(n).name for n in names if n.startswith(f"vllm_runbooks/shipped/{SAMPLE}/")}
    assert {p.name for p in (REPO_ROOT / SAMPLE).iterdir()} == bundle
    for data in (REPO_ROOT / "lib" / "vllm_runbooks" / "data").rglob("*"):
        if data.is_file():
            assert f"vllm_runbooks/{data.relative_to(REPO_ROOT / 'lib' / 'vllm_runbooks').as_posix()}" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_installed_package_is_not_the_checkout(installed: dict[str, Path]) -> None:
    site = _site_package(installed)
    assert REPO_ROOT not in site.parents and site.is_relative_to(installed["python"].parents[1])
    version = _run([str(installed["cli"]), "--version"], installed["work"], _clean_env())
    assert version.returncode == 0 and version.stdout.split()[-1] == __version__


def _run_01_02(cli: list[str], cwd: Path, env: dict[str, str], run_dir: Path | None) -> tuple[dict, dict]:
    """Runbooks 01 then 02 on the sample incident; 01 into ``run_dir`` (None: the default place)."""
    where = ["--run-dir", str(run_dir)] if run_dir else []
    quiet = ["--no-progress", "--format", "json"]
    first = _run([*cli, "run", "evidence_capture", "-r", "source", SAMPLE, *where, *quiet], cwd, env)
    assert first.returncode == 0, first.stderr[-3000:]
    evidence = json.loads(first.stdout)
    into = evidence["run_dir"]
    argv = [*cli, "run", "compatibility_decision", "-r", "evidence_dir", into, "--run-dir", into, *quiet]
    second = _run(argv, cwd, env)
    assert second.returncode == 0, second.stderr[-3000:]
    return evidence, json.loads(second.stdout)


def test_list_run_01_02_from_elsewhere_like_a_checkout(installed: dict[str, Path], tmp_path: Path) -> None:
    work, cli, env = installed["work"], str(installed["cli"]), _clean_env()
    site = _site_package(installed)
    before = _tree(site)

    listed = _run([cli, "list"], work, env)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == [line.split()[0] for line in _run([*CHECKOUT_CLI, "list"], REPO_ROOT, env).stdout.splitlines()]
    assert len(names) == 8 and all(str(site) in line for line in listed.stdout.splitlines())

    evidence, decision = _run_01_02([cli], work, env, None)
    run_dir = Path(evidence["run_dir"])
    assert run_dir.parent == work / "runs", "runs land in ./runs of the current directory"
    for name in ("01_evidence_capture", "02_compatibility_decision"):
        assert (run_dir / f"{name}.ipynb").stat().st_size > 0
        assert (run_dir / f"{name}.html").stat().st_size > 0 and (run_dir / f"{name}.report.html").is_file()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["versions"]["vllm_runbooks"] == __version__
    for entry in record["runbooks"]:
        template = site / "shipped" / "runbooks" / Path(entry["notebook"]).name
        assert entry["template_sha256"] == hashlib.sha256(template.read_bytes()).hexdigest()

    # The same two runbooks from the checkout give the same verdicts and figures.
    ref_env = _clean_env(PYTHONPATH=str(REPO_ROOT / "lib"))
    ref_evidence, ref_decision = _run_01_02(CHECKOUT_CLI, REPO_ROOT, ref_env, tmp_path / "checkout-run")
    for mine, theirs in ((evidence, ref_evidence), (decision, ref_decision)):
        assert mine["headline"] == theirs["headline"], (mine["headline"], theirs["headline"])
    assert decision["headline"]["verdict"] == "driver_too_old"
    assert evidence["headline"]["verdict"] in ("complete", "partial")

    assert _tree(site) == before, "nothing is written inside the installed package"


def test_probe_diagnose_and_check_compat_match_the_checkout(installed: dict[str, Path]) -> None:
    work, cli, env = installed["work"], str(installed["cli"]), _clean_env()
    ref_env = _clean_env(PYTHONPATH=str(REPO_ROOT / "lib"))
    script = work / "probe.py"
    assert _run([cli, "probe", "--write-script", str(script)], work, env).returncode == 0
    ref_script = work / "probe-checkout.py"
    assert _run([*CHECKOUT_CLI, "probe", "--write-script", str(ref_script)], REPO_ROOT, ref_env).returncode == 0
    assert script.read_bytes() == ref_script.read_bytes() and script.stat().st_size > 10_000

    log = REPO_ROOT / SAMPLE / "container-logs.txt"
    commands = (
        ["diagnose-log", str(log), "--format", "json"],
        ["check-compat", "--image-cuda", "13.0", "--driver", "575.57.08", "--gpu", "NVIDIA H200", "--format", "json"],
    )
    for argv in commands:
        mine = _run([cli, *argv], work, env)
        theirs = _run([*CHECKOUT_CLI, *argv], REPO_ROOT, ref_env)
        assert mine.returncode == theirs.returncode, (argv, mine.stderr, theirs.stderr)
        assert _timeless(json.loads(mine.stdout)) == _timeless(json.loads(theirs.stdout)), argv
    diagnosis = json.loads(_run([cli, "diagnose-log", str(log), "--format", "json"], work, env).stdout)
    assert "driver" in json.dumps(diagnosis).lower()


def test_init_writes_a_workspace_whose_runs_stay_inside_it(installed: dict[str, Path], tmp_path: Path) -> None:
    cli, env = str(installed["cli"]), _clean_env()
    workspace = tmp_path / "ws"
    made = _run([cli, "init", str(workspace)], tmp_path, env)
    assert made.returncode == 0, made.stderr
    assert {"incident_console.ipynb", "run_comparison.ipynb", "README.md", "params.example.yaml"} <= {
        p.name for p in workspace.iterdir()
    }
    assert len(list((workspace / "runbooks").glob("0*.ipynb"))) == 8
    again = _run([cli, "init", str(workspace)], tmp_path, env)
    assert again.returncode == 2 and "not empty" in again.stderr
    # A runbook opened from WORKSPACE/runbooks runs there; its run belongs in WORKSPACE/runs.
    code = "from vllm_runbooks.resources import default_runs_dir; print(default_runs_dir())"
    where = _run([str(installed["python"]), "-c", code], workspace / "runbooks", env)
    assert Path(where.stdout.strip()) == workspace / "runs"
