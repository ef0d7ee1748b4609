"""Hand-made run directories for the record's tests: as the runner leaves them, or as a forger would.

``write_run`` writes each entry's executed notebook, lists every file in the manifest and signs
run.json with the machine key (the runner's own writer), so a test reads what a real run holds.
``keyed=False, notebooks=False`` is the forgery hardening round 3 found: results invented without
notebooks, the manifest and the unkeyed sha256 recomputed by hand. A result file (a dict naming a
registered result schema) is written as its runbook's class writes it (``result_factory``), unless
it is named in ``as_given``: then its bytes are the test's, a hostile or older shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from result_factory import real_result, registered
from vllm_runbooks.execution import runjson


def write_run(
    run_dir: Path,
    entries: list[dict],
    files: dict[str, object],
    *,
    notebooks: bool = True,
    keyed: bool = True,
    on_disk: tuple[str, ...] = (),
    as_given: tuple[str, ...] = (),
) -> dict:
    """Write ``files`` (JSON) and run.json listing them and the files ``on_disk`` (folders: every file
    under them, e.g. an ``evidence/`` that ``collect_evidence`` wrote); returns run.json's content."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        if rel not in as_given and isinstance(data, dict) and registered(data.get("schema")) is not None:
            data = real_result(data)
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text(json.dumps(data), encoding="utf-8")
    listed = list(files)
    for rel in on_disk:
        path = run_dir / rel
        found = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        listed += [p.relative_to(run_dir).as_posix() for p in found]
    entries = [dict(e) if isinstance(e, dict) else e for e in entries]
    for entry in entries:
        if not notebooks or not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue  # a hostile shape stays as the test wrote it
        if entry.get("status") == "running" or not isinstance(entry.get("notebook", ""), str):
            continue
        notebook = run_dir / Path(entry.get("notebook") or f"{entry['name']}.ipynb").name
        if not notebook.exists():
            nbformat.write(nbformat.v4.new_notebook(), str(notebook))
        entry["notebook"] = str(notebook)
        listed.append(notebook.name)
    run = {
        "schema": "run",
        "run_id": run_dir.name,
        "runbooks": entries,
        "artefacts": {rel: runjson.sha256_file(run_dir / rel) for rel in listed},
    }
    if keyed:
        return runjson._write_run_json(run_dir / runjson.RUN_JSON, run)  # the runner's own signed writer
    run["signature"] = {"sha256": runjson.run_json_digest(run)}
    (run_dir / runjson.RUN_JSON).write_text(json.dumps(run), encoding="utf-8")
    return run
