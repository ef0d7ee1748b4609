"""Two sources, one result: this machine (``local``) or a bundle copied off a node.

Both hand collectors the same thing: a bundle file name (docs/BUNDLE.md) → ``Captured`` with
bytes that are already redacted, or the reason they could not be had. A bundle may be a
directory or a ``.tar.gz``; tarballs are never extracted: members are checked (no absolute
paths, no ``..``, regular files only, size and count caps) and read in place.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import stat
import tarfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .. import probe
from ..probe import Captured, Options

MAX_MEMBERS = 20_000
MAX_MEMBER_BYTES = 8 * 1024 * 1024 * 1024  # a single log may be big: it is streamed
MAX_TOTAL_BYTES = 32 * 1024 * 1024 * 1024
PROBE_JSON_BYTES = 4 * 1024 * 1024
LOG_SUFFIXES = (".log", ".log.gz", ".out", ".err", ".txt.gz", ".jsonl", ".gz")


def _printable(name: str) -> str:
    """A member or file name with undecodable bytes replaced by U+FFFD (docs/BUNDLE.md).

    Names reach evidence.json, which is UTF-8: a surrogate-escaped byte there would make
    the whole file unwritable.
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _kind(mode: int) -> str:
    for test, what in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISDIR, "directory"),
    ):
        if test(mode):
            return what
    return "special file"


def _check_probe_meta(data: Any) -> None:
    """Raise ValueError unless ``data`` has probe.json's shape: {captures: {name: {…}}, logs: {…}}."""
    if not isinstance(data, dict):
        raise ValueError(f"holds a {type(data).__name__}, not an object")
    for key in ("captures", "logs", "params"):
        if key in data and not isinstance(data[key], dict):
            raise ValueError(f"'{key}' is a {type(data[key]).__name__}, not an object")
    for name, cap in (data.get("captures") or {}).items():
        if not isinstance(cap, dict):
            raise ValueError(f"captures[{str(name)[:60]!r}] is a {type(cap).__name__}, not an object")


class Source:
    """Where raw facts come from."""

    kind = "abstract"
    label = ""

    def read(self, name: str) -> Captured:
        raise NotImplementedError

    def logs(self) -> list[tuple[str, Callable[[], IO[bytes]]]]:
        """(display name, opener of a binary line stream) for every log to store."""
        return []

    def findings(self) -> list[str]:
        """Problems with the source itself (rejected tar members, …)."""
        return []

    def close(self) -> None:
        return None


class LocalSource(Source):
    """This machine: every read runs the probe's bounded capture for that file."""

    kind = "local"

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.label = "local"

    def read(self, name: str) -> Captured:
        return probe.capture(name, self.opts)

    def logs(self) -> list[tuple[str, Callable[[], IO[bytes]]]]:
        out: list[tuple[str, Callable[[], IO[bytes]]]] = []
        for p in self.opts.log_paths:
            out.append((str(p), lambda p=p: probe.open_log_stream(p)))
        if self.opts.container:
            out.append(("container-logs.txt", self._container_logs))
        return out

    def _container_logs(self) -> IO[bytes]:
        got = probe.capture("container-logs.txt", self.opts)
        if got.data is None:
            raise OSError(got.reason or "docker logs unavailable")
        return io.BytesIO(got.data)


class BundleSource(Source):
    """A directory or tarball of files named as in docs/BUNDLE.md."""

    kind = "bundle"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.label = str(path)
        self._tar: tarfile.TarFile | None = None
        self._files: dict[str, Any] = {}  # name -> Path | TarInfo
        self._rejected: list[str] = []
        self._non_utf8: set[str] = set()
        self.truncated: str | None = None
        if not self.path.exists():
            raise FileNotFoundError(f"bundle {self.path} does not exist")
        if self.path.is_dir():
            self._index_dir()
        else:
            self._index_tar()
        self.meta = self._probe_meta()

    # -- indexing -------------------------------------------------------------------------------
    def _index_dir(self) -> None:
        root = self.path.resolve()
        seen = 0
        for dirpath, dirnames, filenames in os.walk(self.path):
            dirnames.sort()
            # A file that is not a link lies where its folder really is: one resolve per folder.
            real_dir = Path(dirpath).resolve()
            inside = real_dir == root or root in real_dir.parents
            for fname in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                p = Path(dirpath) / fname
                rel = _printable(p.relative_to(self.path).as_posix())
                seen += 1
                if seen > MAX_MEMBERS:
                    self._rejected.append(f"more than {MAX_MEMBERS} files: the rest ignored")
                    self._strip_top()
                    return
                try:
                    mode = p.lstat().st_mode
                except OSError as e:
                    self._rejected.append(f"{rel}: cannot stat ({e.strerror or e})")
                    continue
                if stat.S_ISLNK(mode):
                    self._rejected.append(f"{rel}: symbolic link not followed")
                    continue
                if not stat.S_ISREG(mode):
                    self._rejected.append(f"{rel}: not a regular file ({_kind(mode)}), not read")
                    continue
                if not inside:
                    self._rejected.append(f"{rel}: outside the bundle")
                    continue
                self._add(rel, p)
        self._strip_top()

    def _add(self, name: str, ref: Any) -> None:
        if name in self._files:
            self._rejected.append(f"{name}: a second entry of that name (after replacing non-UTF-8 bytes), ignored")
            return
        self._files[name] = ref

    def _index_tar(self) -> None:
        try:
            self._tar = tarfile.open(self.path, "r:*")  # noqa: SIM115 - kept open while reading
        except (tarfile.TarError, OSError, EOFError) as e:
            raise ValueError(f"bundle {self.path} is neither a directory nor a readable tarball: {e}") from e
        total = 0
        members = iter(self._tar)
        n = 0
        while True:
            try:
                m = next(members)
            except StopIteration:
                break
            except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
                # An interrupted copy: everything indexed so far is read; the rest is named a finding.
                self.truncated = f"tarball ends early after {n} members ({type(e).__name__}: {e}); the rest is missing"
                self._rejected.append(self.truncated)
                break
            n += 1
            if n > MAX_MEMBERS:
                self._rejected.append(f"more than {MAX_MEMBERS} members: the rest ignored")
                break
            name = _printable(m.name)
            norm = posixpath.normpath(name.lstrip("./")) if name not in {".", "./"} else ""
            if name.startswith("/") or norm.startswith("..") or "/../" in f"/{name}/" or ":" in name.split("/")[0]:
                self._rejected.append(f"{name}: unsafe path (absolute or '..')")
                continue
            if m.isdir():
                continue
            if not m.isreg():
                self._rejected.append(f"{name}: not a regular file (link or device), ignored")
                continue
            if m.size > MAX_MEMBER_BYTES:
                self._rejected.append(f"{name}: {m.size} bytes exceeds the per-file cap")
                continue
            total += m.size
            if total > MAX_TOTAL_BYTES:
                self._rejected.append(f"{name}: bundle exceeds {MAX_TOTAL_BYTES} bytes in total; rest ignored")
                break
            self._add(norm, m)
        self._strip_top()

    def _strip_top(self) -> None:
        """``bundle/nvidia-smi.txt`` and ``nvidia-smi.txt`` mean the same."""
        names = list(self._files)
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) == 1 and all("/" in n for n in names):
            top = tops.pop() + "/"
            self._files = {n[len(top) :]: v for n, v in self._files.items()}

    def _probe_meta(self) -> dict[str, Any]:
        """probe.json, when it has the shape the probe writes; otherwise {} and a finding saying why."""
        if "probe.json" not in self._files:
            return {}
        try:
            with self._open("probe.json") as f:
                raw = f.read(PROBE_JSON_BYTES + 1)
            if len(raw) > PROBE_JSON_BYTES:
                raise ValueError(f"larger than {PROBE_JSON_BYTES} bytes")
            data = json.loads(raw.decode("utf-8", "replace"))
            _check_probe_meta(data)
            return data
        except RecursionError:
            why = "nested too deeply"
        except (ValueError, OSError, EOFError, tarfile.TarError, zlib.error) as e:
            why = str(e)[:200]
        self._rejected.append(f"probe.json ignored: {why}")
        return {}

    @contextmanager
    def _open(self, name: str) -> Iterator[IO[bytes]]:
        ref = self._files[name]
        if isinstance(ref, Path):
            with open(ref, "rb") as f:
                yield f
        else:
            assert self._tar is not None
            f = self._tar.extractfile(ref)
            if f is None:
                raise OSError(f"{name}: cannot read from tarball")
            try:
                yield f
            finally:
                f.close()

    # -- Source API -----------------------------------------------------------------------------
    def names(self) -> list[str]:
        return sorted(self._files)

    def read(self, name: str) -> Captured:
        if name not in self._files:
            why = f"{name} not in bundle"
            cap = (self.meta.get("captures") or {}).get(name) if self.meta else None
            if isinstance(cap, dict) and isinstance(cap.get("reason"), str):
                why += f" (probe: {cap['reason']})"
            return Captured(name, "unavailable", reason=why)
        try:
            with self._open(name) as f:
                data = f.read(probe.MAX_CAPTURE_BYTES + 1)
        except (OSError, tarfile.TarError, EOFError, zlib.error) as e:
            return Captured(name, "unavailable", reason=f"cannot read {name} from bundle: {e}")
        reason = None
        if len(data) > probe.MAX_CAPTURE_BYTES:
            data = data[: probe.MAX_CAPTURE_BYTES]
            reason = f"{name} larger than {probe.MAX_CAPTURE_BYTES} bytes: truncated"
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            reason = (reason + "; " if reason else "") + f"{name} is not UTF-8: undecodable bytes replaced"
        status = "partial" if reason else "ok"
        return Captured(name, status, data=probe.redact_bytes(name, data), reason=reason, argv=[f"bundle:{name}"])

    def logs(self) -> list[tuple[str, Callable[[], IO[bytes]]]]:
        out: list[tuple[str, Callable[[], IO[bytes]]]] = []
        for name in sorted(self._files):
            if (
                name.startswith("logs/")
                or name == "container-logs.txt"
                or ("/" not in name and name.endswith(LOG_SUFFIXES) and name not in probe.BUNDLE_FILES)
            ):
                out.append((name, lambda n=name: self._stream(n)))
        return out

    def _stream(self, name: str) -> IO[bytes]:
        ref = self._files[name]
        if isinstance(ref, Path):
            return probe.open_log_stream(ref)
        assert self._tar is not None
        f = self._tar.extractfile(ref)
        if f is None:
            raise OSError(f"{name}: cannot read from tarball")
        return probe.decompressing(f)  # type: ignore[no-any-return]

    def findings(self) -> list[str]:
        return list(self._rejected)

    def close(self) -> None:
        if self._tar is not None:
            self._tar.close()
            self._tar = None
