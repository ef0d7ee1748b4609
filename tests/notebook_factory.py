"""Build small runbook templates in a temp folder, so runner tests do not depend on real runbooks."""

from __future__ import annotations

from pathlib import Path

import nbformat


def make_template(folder: Path, filename: str, body: list[str], parameters: str = "run_dir = None\n") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_markdown_cell("# Test runbook\n\nParameters: `run_dir`."))
    params = nbformat.v4.new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    nb.cells.append(params)
    nb.cells.extend(nbformat.v4.new_code_cell(src) for src in body)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    nbformat.write(nb, str(path))
    return path
