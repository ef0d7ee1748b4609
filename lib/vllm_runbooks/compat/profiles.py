"""Model profiles (data files): what a model's recipe demands of image, driver, GPUs and flags."""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import yaml

DEFAULT_PROFILE = "generic_vllm"


@functools.cache
def load_profile(name: str) -> dict[str, Any]:
    """Profile by name from data/profiles/<name>.yaml; unknown names raise KeyError with the list."""
    base = resources.files("vllm_runbooks").joinpath("data/profiles")
    path = base.joinpath(f"{name}.yaml")
    if not re.fullmatch(r"[a-z0-9_]+", name or "") or not path.is_file():
        raise KeyError(f"unknown model profile {name!r}; known: {', '.join(profile_names())}")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def profile_names() -> list[str]:
    """The model profiles shipped in data/profiles/."""
    base = resources.files("vllm_runbooks").joinpath("data/profiles")
    return sorted(p.name[:-5] for p in base.iterdir() if p.name.endswith(".yaml"))


def guess_profile(argv: list[str] | None, image_ref: str | None = None) -> str:
    """Pick the profile whose `match` regex hits the launch's model id or the image ref."""
    haystack = " ".join([*(argv or []), image_ref or ""])
    for name in profile_names():
        pat = load_profile(name).get("match")
        if pat and re.search(pat, haystack):
            return name
    return DEFAULT_PROFILE
