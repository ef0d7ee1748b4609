"""On-disk cache of the compiled signature database, so the command line starts in milliseconds.

Why: parsing the YAML and compiling ~250 patterns took ~0.35 s of every ``diagnose-log`` run,
more than scanning a 100 MB log. The cache entry is keyed on the SHA-256 of the signature file,
the engine, the Hyperscan version and a format number, so editing a signature invalidates it. It
is written atomically (temporary file, then rename) and ignored when unreadable or corrupt. Only
Hyperscan databases serialise; other engines still reuse the parsed signatures.

Location: ``$VLLM_RUNBOOKS_CACHE/logsig`` when set, else ``<checkout>/.cache/vllm-runbooks/logsig``
for a source checkout (the same resolution as ``target/paths.py``, without importing the
target package), else ``$XDG_CACHE_HOME/vllm-runbooks/logsig`` (``~/.cache`` by default).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

#: Bump when the cached structure changes.
FORMAT = 8
_MEMO: dict[str, Any] = {}


def cache_dir() -> Path:
    """Directory of the compiled-database cache (see module docstring)."""
    env = os.environ.get("VLLM_RUNBOOKS_CACHE")
    if env:
        return Path(env).expanduser() / "logsig"
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "lib" / "vllm_runbooks").is_dir():
            return parent / ".cache" / "vllm-runbooks" / "logsig"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "vllm-runbooks" / "logsig"


def _hs_version(engine: str) -> str:
    if engine != "hyperscan":
        return "none"
    from .matcher import _mod

    hs = _mod("hyperscan")
    return str(getattr(hs, "__version__", "unknown")) if hs is not None else "none"


def cache_key(sig_bytes: bytes, engine: str) -> str:
    """Key of a cache entry: signature file hash, engine, Hyperscan version, format."""
    h = hashlib.sha256(sig_bytes)
    h.update(f"|{engine}|{_hs_version(engine)}|{FORMAT}".encode())
    return h.hexdigest()[:32]


def _load(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            data = pickle.load(fh)  # noqa: S301 - our own cache file, in our own cache directory
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        return data
    except Exception:  # noqa: BLE001 - corrupt, truncated, unreadable: rebuild
        return None


def _store(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pkl")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # read-only home, full disk: run uncached


def default_compiled(engine: str = "auto") -> Any:
    """The packaged signatures compiled for ``engine``; from memory, disk, or compiled now."""
    from .classify import _Compiled, build_compiled, pattern_owners
    from .matcher import HyperscanEngine, hyperscan_available, make_engine
    from .signatures import default_signatures_bytes

    sig_bytes = default_signatures_bytes()
    want = engine
    if engine == "auto":
        want = "hyperscan" if hyperscan_available() else engine
    key = cache_key(sig_bytes, want)
    hit = _MEMO.get(key)
    if hit is not None:
        return hit
    path = cache_dir() / f"{key}.pkl"
    data = _load(path)
    comp = None
    if data is not None:
        try:
            sigset = data["sigset"]
            patterns, owners, _ = data["patterns"], data["owners"], data["lean_idx"]
            if data.get("full") is not None:
                full, lean = HyperscanEngine.from_bytes(data["full"]), HyperscanEngine.from_bytes(data["lean"])
                comp = _Compiled(sigset, patterns, owners, full, lean)
            else:
                _, _, lean_idx = pattern_owners(sigset)
                comp = _Compiled(
                    sigset, patterns, owners, make_engine(want, patterns), make_engine(want, patterns, lean_idx)
                )
        except Exception:  # noqa: BLE001 - a stale or foreign entry: rebuild below
            comp = None
    if comp is None:
        from .signatures import _default_signatures

        sigset = _default_signatures()
        comp = build_compiled(sigset, want)
        if isinstance(comp.full, HyperscanEngine):
            comp.full.ensure_exact()
        _, _, lean_idx = pattern_owners(sigset)
        entry: dict[str, Any] = {
            "format": FORMAT,
            "sigset": sigset,
            "patterns": comp.patterns,
            "owners": comp.owners,
            "lean_idx": lean_idx,
            "full": comp.full.dump() if isinstance(comp.full, HyperscanEngine) else None,
            "lean": comp.lean.dump() if isinstance(comp.lean, HyperscanEngine) else None,
        }
        _store(path, entry)
    _MEMO[key] = comp
    return comp
