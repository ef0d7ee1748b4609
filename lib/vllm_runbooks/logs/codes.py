"""Numeric NVML / CUDA / NCCL return codes in log lines, resolved to labels from data.

Why: Go agents, device plugins and C++ servers log ``cuInit err: 999`` or ``nvml init failed:
ERROR_LIBRARY_NOT_FOUND`` where vLLM would print a sentence. The number means the same fact in
every program, so it is looked up in ``data/error_codes.yaml`` (values from NVIDIA's headers),
never guessed. Only lines that name the library are read, so "error 2" alone decides nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Code:
    """One table entry: which library, the number, its NVIDIA name, the label it decides."""

    table: str
    value: int
    name: str
    label: str | None
    source: str


# A line names the library, then (within a short distance) a code number. Python regexes, run
# only on candidate lines the prefilter already picked.
_NUMBER: dict[str, re.Pattern[str]] = {
    "nvml": re.compile(
        r"(?i)\bnvml\w*[^\n]{0,60}?(?:return(?:ed)?|ret|error|err|code|fail(?:ed|ure)?)\b[\s:=(]{0,4}(?:code\s*)?(\d{1,3})\b"
    ),
    "cuda": re.compile(
        r"(?:\bcu[A-Z]\w*|\bcuda\w*|\bCUDA\w*|\bnvcuda\b)[^\n]{0,40}?\b(?:err(?:or)?|failure|failed|returned|code)"
        r"[\s:=(]{0,4}(\d{1,3})\b"
    ),
    "nccl": re.compile(r"(?i)\bnccl\w*[^\n]{0,60}?\b(?:result|error|code|failed)[\s:=(]{0,4}(\d)\b"),
}
_NAME = re.compile(r"\b((?:NVML_)?ERROR_[A-Z_]+|CUDA_ERROR_[A-Z_]+|nccl[A-Z][A-Za-z]+Error)\b")


@lru_cache(maxsize=1)
def code_tables() -> dict[str, dict[int, Code]]:
    """The packaged code tables, by library, then by number."""
    import yaml

    text = (resources.files("vllm_runbooks") / "data" / "error_codes.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    out: dict[str, dict[int, Code]] = {}
    for table, spec in data["tables"].items():
        out[table] = {
            int(v): Code(table, int(v), str(e["name"]), e.get("label"), str(spec["source"]))
            for v, e in spec["codes"].items()
        }
    return out


def _by_name(tables: dict[str, dict[int, Code]]) -> dict[str, Code]:
    names: dict[str, Code] = {}
    for codes in tables.values():
        for c in codes.values():
            names[c.name] = c
            if c.name.startswith("NVML_ERROR_"):
                names[c.name[len("NVML_") :]] = c  # go-nvml prints ERROR_LIBRARY_NOT_FOUND
    return names


def resolve(line: str, tables: dict[str, dict[int, Code]] | None = None) -> Code | None:
    """The known code this line reports, by enum name first, then by number; None if none."""
    tables = tables or code_tables()
    names = _by_name(tables)
    for m in _NAME.finditer(line):
        c = names.get(m.group(1))
        if c is not None:
            return c
    low = line.lower()
    for table, cue in (("nvml", "nvml"), ("nccl", "nccl"), ("cuda", "cu")):
        if cue not in low:
            continue
        m = _NUMBER[table].search(line)
        if m is not None:
            c = tables[table].get(int(m.group(1)))
            if c is not None:
                return c
    return None
