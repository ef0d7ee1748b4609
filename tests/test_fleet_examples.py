"""examples/fleet/daemonset.yaml parses, references real things, and its probe command works.

The init container's command is run here as written (paths mapped to a temp dir, $(VARS)
expanded the way Kubernetes does), with the script `probe --write-script` produces, and the bundle
it writes is read by runbook 07's bundle-directory mode.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO_ROOT
from vllm_runbooks import probe
from vllm_runbooks.fleet import Config, run

MANIFEST = REPO_ROOT / "examples" / "fleet" / "daemonset.yaml"


def _docs() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text(encoding="utf-8")) if d}


def _probe_container() -> dict:
    spec = _docs()["DaemonSet"]["spec"]["template"]["spec"]
    (init,) = spec["initContainers"]
    return init


def test_manifest_is_consistent() -> None:
    docs = _docs()
    assert set(docs) == {"PersistentVolumeClaim", "DaemonSet"}
    ds = docs["DaemonSet"]
    spec = ds["spec"]
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    pod = spec["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    init = _probe_container()
    for mount in init["volumeMounts"]:
        assert mount["name"] in volumes, mount
    assert volumes["bundles"]["persistentVolumeClaim"]["claimName"] == docs["PersistentVolumeClaim"]["metadata"]["name"]
    assert docs["PersistentVolumeClaim"]["metadata"]["namespace"] == ds["metadata"]["namespace"]
    # The ConfigMap key is the file `probe --write-script probe_node.py` writes, mounted where the command runs it.
    item = volumes["probe"]["configMap"]["items"][0]
    mount = next(m for m in init["volumeMounts"] if m["name"] == "probe")["mountPath"]
    assert item["key"] == "probe_node.py" and f"{mount}/{item['path']}" in init["command"]
    # Every flag the command passes is one the probe accepts.
    flags = {opt for action in probe.build_parser()._actions for opt in action.option_strings}
    passed = [a for a in init["command"][3:] if a.startswith("--")]
    assert passed and set(passed) <= flags
    env = {e["name"]: e for e in init["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    for var in re.findall(r"\$\((\w+)\)", " ".join(init["command"])):
        assert var in env, f"$({var}) is not defined in the container's env"
    assert "--out" in init["command"]


def test_the_probe_command_writes_a_bundle_runbook_07_reads(tmp_path: Path) -> None:
    init = _probe_container()
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    probe_dir, bundles = tmp_path / "probe", tmp_path / "bundles"
    probe_dir.mkdir()
    bundles.mkdir()
    probe.write_script(probe_dir / "probe_node.py")
    env = {e["name"]: e.get("value") for e in init["env"]}
    env["NODE_NAME"] = "gpu-node-test"

    def expand(arg: str) -> str:
        arg = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], arg)
        for name, local in (("probe", probe_dir), ("bundles", bundles)):
            if arg.startswith(mounts[name] + "/"):
                return str(local) + arg[len(mounts[name]) :]
        return arg

    argv = [expand(a) for a in init["command"]]
    argv[0] = shutil.which(argv[0]) or sys.executable
    argv[argv.index("--timeout") + 1] = "5"  # keep the test short; the manifest's value is checked above
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    survey = bundles / env["SURVEY_ID"]
    assert (survey / "gpu-node-test" / "probe.json").is_file()
    result = run(Config(bundles=[str(survey)], run_dir=str(tmp_path / "run")))
    (node,) = result.nodes
    assert node.node == "gpu-node-test" and node.answered and node.hostname
