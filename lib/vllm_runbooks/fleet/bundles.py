"""Bundle-directory mode: one node per sub-directory or tarball, however the bundles were collected.

A Kubernetes DaemonSet writing ``/bundles/$NODE_NAME/``, a Slurm job array, an ssh loop or the Ray
survey itself (``<run_dir>/fleet/<node>/bundle.tar.gz``) all end as a folder of node bundles. The
node's name is the entry's name; the bundle's contents are read by the evidence package
(``collect_evidence`` with a bundle source), never parsed here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from .model import WHY_BAD_BUNDLE, NodeRow, unanswered

TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")
MAX_NODES = 100_000  # a bound on what one survey reads, whatever the folder holds
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def node_name(text: str) -> str:
    """A node name safe as a folder name under ``<run_dir>/fleet/`` (no slashes, no dots-only)."""
    name = _UNSAFE.sub("-", text).strip("-.")[:120]
    return name or "node"


def _strip_tar(name: str) -> str:
    for suffix in TAR_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def find_bundles(folders: str | Path | Iterable[str | Path]) -> tuple[list[tuple[str, Path]], list[NodeRow]]:
    """(node, bundle path) for every node bundle in ``folders``, plus rows for entries that are not one.

    An entry is a bundle when it is a directory or a tarball. A directory that holds a
    ``bundle.tar.gz`` (a node folder of an earlier Ray survey) contributes that tarball. Two
    entries with the same node name keep the first and list the second as unanswered. A link or
    a hidden folder or tarball is never read, and never skipped silently: it is listed as
    unanswered with the reason, so a node is never missing from the table without a word.
    """
    if isinstance(folders, str | Path):
        folders = [folders]
    found: list[tuple[str, Path]] = []
    bad: list[NodeRow] = []
    seen: set[str] = set()
    for folder in folders:
        root = Path(folder)
        if not root.is_dir():
            raise FileNotFoundError(f"bundle folder {root} is not a directory")
        for entry in sorted(root.iterdir()):
            if len(found) >= MAX_NODES:
                bad.append(unanswered("more-nodes", WHY_BAD_BUNDLE, f"more than {MAX_NODES} entries", "bundle"))
                return found, bad
            if entry.is_symlink() or entry.name.startswith("."):
                looks_like_bundle = entry.is_dir() or entry.name.endswith(TAR_SUFFIXES)
                if entry.is_symlink() or looks_like_bundle:  # .DS_Store and .gitkeep are not nodes
                    kind = (
                        "a symbolic link (not followed: it could point anywhere)"
                        if entry.is_symlink()
                        else ("hidden (its name starts with a dot)")
                    )
                    name = node_name(_strip_tar(entry.name))
                    bad.append(unanswered(name, WHY_BAD_BUNDLE, f"{entry.name}: {kind}; not read", "bundle"))
                continue
            if entry.is_dir():
                nested = entry / "bundle.tar.gz"
                path = nested if nested.is_file() else entry
            elif entry.is_file() and entry.name.endswith(TAR_SUFFIXES):
                path = entry
            else:
                continue  # a README or a stray file is not a node
            name = node_name(_strip_tar(entry.name))
            if name in seen:
                bad.append(unanswered(f"{name}@{root.name}", WHY_BAD_BUNDLE, f"duplicate node name {name}", "bundle"))
                continue
            seen.add(name)
            found.append((name, path))
    return found, bad
