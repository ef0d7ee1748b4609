"""Without Ray: the product never imports it, and the fleet CLI says how to install it (exit 2)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO_ROOT

# Makes `import ray` fail in the child as if Ray were not installed.
BLOCK_RAY = """
import sys
class _NoRay:
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError("No module named 'ray' (blocked by the test)")
        return None
sys.meta_path.insert(0, _NoRay())
"""

IMPORT_ALL = """
import importlib, pkgutil, sys
import vllm_runbooks
failed = {}
for info in pkgutil.walk_packages(vllm_runbooks.__path__, "vllm_runbooks."):
    if info.name == "vllm_runbooks.fleet.ray_survey" or info.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed[info.name] = repr(exc)
ray_failures = {k: v for k, v in failed.items() if "ray" in v.lower().replace("array", "")}
print("RAY_FAILURES", ray_failures)
print("RAY_LOADED", [m for m in sys.modules if m == "ray" or m.startswith("ray.")])
print("IMPORTED", len([m for m in sys.modules if m.startswith("vllm_runbooks.")]))
"""


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_RAY + code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300
    )


def test_no_module_but_the_ray_runner_imports_ray() -> None:
    out = _child(IMPORT_ALL)
    assert "RAY_FAILURES {}" in out.stdout, out.stdout + out.stderr
    assert "RAY_LOADED []" in out.stdout, out.stdout
    imported = int(out.stdout.split("IMPORTED ")[1].split()[0])
    assert imported > 40, out.stdout  # the walk really imported the product


def test_fleet_cli_without_ray_says_how_to_install_and_exits_2() -> None:
    code = "from vllm_runbooks.cli import main\nraise SystemExit(main(['fleet', '--ray-address', 'auto']))"
    out = _child(code)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "pip install 'vllm-runbooks[fleet]'" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_ray_runner_itself_names_the_extra_without_ray(tmp_path) -> None:
    code = (
        "from pathlib import Path\nfrom vllm_runbooks.fleet.ray_survey import survey\n"
        "try:\n    survey('auto', Path('.'))\nexcept ImportError as exc:\n    print('HINT', exc)\n"
    )
    out = _child(code)
    assert "HINT Ray is not installed: pip install 'vllm-runbooks[fleet]'" in out.stdout, out.stdout + out.stderr
