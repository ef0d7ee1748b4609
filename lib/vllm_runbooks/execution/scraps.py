"""Scraps: named JSON values glued into an executed notebook and read back without Jupyter.

scrapbook is no longer maintained, so ``glue`` writes scrapbook's wire format itself and
``read_scraps`` reads it back with nbformat alone. Notebooks glued here stay readable by
``scrapbook.read_notebook`` too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..records import to_jsonable

SCRAP_MIME = "application/scrapbook.scrap.json+json"


def glue(name: str, data: Any) -> None:
    """Record ``data`` (made plain JSON) under ``name`` in the running notebook's outputs."""
    from IPython.display import display  # imported lazily: the library works without IPython

    payload = {"name": name, "data": to_jsonable(data), "encoder": "json", "version": 1}
    display(
        {SCRAP_MIME: payload},
        raw=True,
        metadata={"scrapbook": {"name": name, "data": True, "display": False}},
    )


def read_scraps(notebook: str | Path | dict) -> dict[str, Any]:
    """All scraps of an executed notebook, by name (the last glue of a name wins)."""
    if isinstance(notebook, dict):
        nb = notebook
    else:
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    scraps: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            payload = (output.get("data") or {}).get(SCRAP_MIME)
            if isinstance(payload, str):
                try:
                    payload = json.loads(payload)
                except ValueError:
                    continue
            if isinstance(payload, dict) and "name" in payload:
                scraps[payload["name"]] = payload.get("data")
    return scraps
