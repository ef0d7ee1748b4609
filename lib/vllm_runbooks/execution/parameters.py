"""A runbook's declared parameters, and the checks every value passes before a run starts.

papermill writes each parameter as ``NAME = VALUE`` into the executed notebook, so a name that
is not declared would run as code and a value of the wrong type would fail an hour later in the
cell that uses it. Everything here refuses (``RunbookError``) before a run directory is touched.
This module imports nothing of the runner: the runner, the CLI and the console share it.
"""

from __future__ import annotations

import keyword
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..redact import redact_text


class RunbookError(Exception):
    """A run that could not even start: unknown runbook, notebook already present, bad params.

    Defined here, beside the parameter checks that raise it most, so that this module need not
    import the runner; ``vllm_runbooks.execution.runner.RunbookError`` is the same class.
    """


def coerce_cli_value(text: str) -> Any:
    """papermill's -p typing: True/False/None, int, float, else the string itself.

    Only ASCII digits make a number: Python reads ``int("１３")`` as 13, and a full-width
    version typed into a ticket must not pass as one.
    """
    if not text.isascii():
        return text
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if text in ("None", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def load_param_file(path: str | Path) -> dict[str, Any]:
    """A YAML mapping of parameters; anything else (bad YAML, not UTF-8, a list) is refused.

    Read with the bounded YAML loader (no anchors or aliases: 235 bytes of aliases once made a
    28 MB notebook), and every value checked for what no runbook can take whatever its type
    (lone surrogates, a key pasted as ``api_key_env``), so that a suite refuses before its first
    runbook runs. A relative ``examples/…`` path missing here is the shipped example
    (``examples/suite.yaml`` means the same from a checkout and from a wheel).
    """
    import yaml

    from ..bounded import YamlRefused, load_yaml
    from ..resources import resolve_shipped_path

    path = resolve_shipped_path(path)

    try:
        data = load_yaml(path, MAX_PARAM_FILE_BYTES) or {}
    except OSError as exc:
        raise RunbookError(f"{path}: cannot read the parameters file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RunbookError(f"{path}: the parameters file is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except YamlRefused as exc:
        raise RunbookError(f"parameters file {exc}") from exc
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise RunbookError(f"{path}: not valid YAML{at}: {problem}") from exc
    except ValueError as exc:  # a value the YAML constructor cannot build (an int of 5000 digits)
        raise RunbookError(f"{path}: a value cannot be read: {redact_text(str(exc))[:200]}") from exc
    if not isinstance(data, dict):
        raise RunbookError(f"{path}: a parameters file must hold a mapping, not {type(data).__name__}")
    _check_file_values(path, data)
    return data


def _check_file_values(path: str | Path, data: Mapping[Any, Any]) -> None:
    """Refuse a lone surrogate anywhere in a parameters file, and a value that is not a variable
    name under an environment-variable parameter at the top or in a section (suite files)."""
    where = lone_surrogate(data)
    if where:
        raise RunbookError(f"{path}: a value is not valid Unicode ({where}); {SURROGATE_HINT}")
    sections = [("", data)] + [(f"{k}.", v) for k, v in data.items() if isinstance(v, Mapping)]
    for prefix, section in sections:
        for key, value in section.items():
            if isinstance(key, str) and is_env_parameter(key) and not isinstance(value, Mapping | list):
                check_env_name(str(path), f"{prefix}{key}", value)


#: A parameters file larger than this is refused unread (a real one is a few hundred bytes).
MAX_PARAM_FILE_BYTES = 1024 * 1024
#: Seconds-valued parameters (``…_s``, ``…_seconds``) must lie in (0, MAX_SECONDS].
MAX_SECONDS = 24 * 3600


def _is_seconds(name: str) -> bool:
    return name.endswith(("_s", "_seconds")) or name in {"timeout", "seconds"} or name.startswith("max_seconds")


def check_parameters(runbook: str, declared: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``params`` against the runbook's declared parameters; returns them with types fixed.

    Refuses (``RunbookError``) a key that is not an identifier or not declared, and a value whose
    type does not fit the default's; a single path where a list is declared becomes a one-item
    list; numbers given for a text parameter become text; seconds must be in (0, 24 h].
    """
    names = ", ".join(sorted(declared)) or "(none)"
    out: dict[str, Any] = {}
    for key, value in params.items():
        shown = redact_text(repr(key))[:200]
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            raise RunbookError(f"parameter {shown} is not a parameter name; {runbook} takes: {names}")
        if key not in declared:
            raise RunbookError(f"unknown parameter {shown} for {runbook}; it takes: {names}")
        where = lone_surrogate(value, key)
        if where:
            raise RunbookError(f"parameter {key!r} of {runbook} is not valid Unicode ({where}); {SURROGATE_HINT}")
        if is_env_parameter(key) and (declared[key] is None or isinstance(declared[key], str)):
            out[key] = check_env_name(runbook, key, value)
            continue
        out[key] = _check_type(runbook, key, declared[key], value)
    return out


#: How a lone surrogate gets into a value, and what to do: said with every refusal of one.
SURROGATE_HINT = (
    "a lone surrogate: bytes that are not UTF-8 on a command line or in a path, or a \\ud800 escape "
    "in YAML or JSON; run.json and the notebook cannot hold it: give the value as UTF-8"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any, label: str = "", limit: int = 100_000) -> str | None:
    """Where a lone surrogate in ``value`` is (text, or lists and mappings of it, keys included),
    in words (``log_paths[1]: U+DCFF at character 4``); None when there is none.

    Iterative, so a deeply nested value cannot exhaust the stack; at most ``limit`` items.
    """
    stack: list[tuple[str, Any]] = [(label, value)]
    for _ in range(limit):
        if not stack:
            break
        label, item = stack.pop()
        if isinstance(item, str):
            hit = _SURROGATE.search(item)
            if hit:
                return f"{label or 'the value'}: U+{ord(hit.group()):04X} at character {hit.start()}"
        elif isinstance(item, Mapping):
            for k, v in item.items():
                stack.append((f"a key of {label or 'the mapping'}", k))
                stack.append((f"{label}[{k!r}]" if label else repr(k), v))
        elif isinstance(item, list | tuple):
            stack.extend((f"{label or 'the value'}[{i}]", v) for i, v in enumerate(item))
    return None


#: Parameters that NAME an environment variable holding a secret (the runbook reads it at run
#: time); any parameter ending ``_env`` whose default is text or None is one too.
ENV_NAME_PARAMETERS = ("api_key_env",)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def is_env_parameter(name: str) -> bool:
    """Whether parameter ``name`` names an environment variable (listed, or ending ``_env``)."""
    return name in ENV_NAME_PARAMETERS or name.endswith("_env")


def is_env_name(value: Any) -> bool:
    """Whether ``value`` can be an environment variable's name and does not look like a secret."""
    return isinstance(value, str) and bool(ENV_NAME.fullmatch(value)) and redact_text(value) == value


def check_env_name(runbook: str, key: str, value: Any) -> Any:
    """``value`` when it names an environment variable (None or "" = no variable); else refused.

    Why: a user who pastes the key itself would run without a key and write the key into
    run.json, the notebook, both HTML copies and the runbook's JSON. The refusal never shows the
    value, not even its start: it may be the secret.
    """
    if value is None or value == "" or is_env_name(value):
        return value
    what = f"{len(value)} characters" if isinstance(value, str) else f"of type {type(value).__name__}"
    looks = "; it looks like a key" if isinstance(value, str) and ENV_NAME.fullmatch(value) else ""
    raise RunbookError(
        f"parameter {key!r} of {runbook} must be the NAME of an environment variable (letters, digits "
        f"and _, not starting with a digit, at most 128), not the key itself; the value given "
        f"({what}{looks}) is not shown. Put the key in a variable (export VLLM_API_KEY=...) and pass "
        "its name"
    )


def refuse_non_utf8_path(option: str, path: str | os.PathLike[str] | None) -> None:
    """Refuse a path whose name is not UTF-8 (Python reads such bytes as lone surrogates).

    Why: a run directory's path goes into run.json, the notebook and the JUnit report, none of
    which can hold it; the run would crash after creating the directory. The absolute form is
    checked, so a UTF-8 relative name under a non-UTF-8 working directory is refused too.
    """
    if path is None:
        return
    text = os.path.abspath(os.fspath(path))
    hit = _SURROGATE.search(text)
    if hit:
        shown = text.encode("utf-8", "backslashreplace").decode("utf-8")
        code = ord(hit.group())
        what = f"byte \\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        raise RunbookError(
            f"{option} {shown} is not valid UTF-8 ({what} at character {hit.start()}): run.json and the "
            "notebook cannot hold such a path; use a UTF-8 name"
        )


def _check_type(runbook: str, key: str, default: Any, value: Any) -> Any:
    def refuse(expected: str) -> RunbookError:
        return RunbookError(
            f"parameter {key!r} of {runbook} takes {expected}, not {type(value).__name__} "
            f"{redact_text(repr(value))[:120]}"
        )

    if isinstance(value, float) and not math.isfinite(value):
        raise refuse("a finite number")
    if value is None or default is None:
        checked = value
    elif isinstance(default, bool):
        if not isinstance(value, bool):
            raise refuse("true or false")
        checked = value
    elif isinstance(default, int | float):
        if isinstance(value, bool):
            raise refuse("a number")
        if isinstance(value, str):
            text = value.strip()
            if not text.isascii():  # int("１２") is 12: full-width digits are not a number here
                raise refuse("a number")
            try:
                value = int(text)
            except ValueError:
                try:
                    value = float(text)
                except ValueError:
                    raise refuse("a number") from None
            if not math.isfinite(value):
                raise refuse("a finite number")
        if not isinstance(value, int | float):
            raise refuse("a number")
        if isinstance(default, int) and not _is_seconds(key) and isinstance(value, float):
            if not value.is_integer():
                raise refuse("a whole number")
            value = int(value)
        checked = value
    elif isinstance(default, str):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise refuse("text")
        checked = value if isinstance(value, str) else str(value)
    elif isinstance(default, list | tuple):
        if isinstance(value, str):
            checked = [value]  # one path where a list of paths is declared
        elif isinstance(value, list | tuple):
            checked = list(value)
        else:
            raise refuse("a list (or a single value)")
    elif isinstance(default, dict):
        if not isinstance(value, dict):
            raise refuse("a mapping")
        checked = value
    else:
        checked = value
    if _is_seconds(key) and checked is not None:
        if isinstance(checked, bool) or not isinstance(checked, int | float):
            raise refuse("a number of seconds")
        if not (0 < checked <= MAX_SECONDS):
            raise RunbookError(
                f"parameter {key!r} of {runbook} is {checked!r} seconds; it must lie in (0, {MAX_SECONDS}]"
            )
    return checked


#: Parameters the runbooks act on (not just record): redacting them would silently change what is tested.
TARGET_PARAMETERS = ("endpoint", "ray_address")

#: Commands the runbooks execute (not just record, as ``launch_command`` is): redacting a
#: credential in them would run a different command, keeping it would write it into the evidence.
COMMAND_PARAMETERS = ("restart_command",)


def refuse_altered_targets(raw: Mapping[str, Any], redacted: Mapping[str, Any]) -> None:
    """Refuse a target or command parameter that redaction changed (``raw`` before, ``redacted`` after).

    Running with the redacted value would test another target or run another command; running
    with the raw one would write the credential into the evidence. Neither is acceptable.
    """
    for key in TARGET_PARAMETERS:
        if key in raw and raw[key] != redacted.get(key):
            raise RunbookError(
                f"parameter {key!r} carries a credential (user:password@ or a token in the URL); "
                "give the URL without it and pass the secret through an environment variable "
                "(for an endpoint: the variable named by api_key_env)"
            )
    for key in COMMAND_PARAMETERS:
        if key in raw and raw[key] != redacted.get(key):
            raise RunbookError(
                f"parameter {key!r} carries a credential (a token, password or key in the command); "
                "it would run with the credential redacted: pass secrets through an environment "
                "variable the command reads (e.g. KUBECONFIG, DOCKER_CONFIG) instead"
            )


#: Parameters naming files the runbook reads whose names the rule in :func:`is_path_parameter`
#: does not catch: a path that exists is used as given (redacting ``/data/key=abc/bundle`` would
#: make the runbook read a path that does not exist).
PATH_PARAMETERS = (
    "source",
    "log_paths",
    "evidence_dir",
    "log_path",
    "tool_schema_file",
    "requests_jsonl",
    "nccl_tests_file",
    "server_log",
    "results_file",
    "baseline_dir",
    "record_of",
    "bundles",
    "runs_dir",
    "rules_file",
    "restart_target_root",
)

#: Name endings that mark a path parameter in a new template without editing this module.
PATH_SUFFIXES = ("_file", "_files", "_dir", "_dirs", "_path", "_paths", "_log", "_root", "_jsonl")


def is_path_parameter(name: str) -> bool:
    """Whether parameter ``name`` names files or folders (listed, or by the naming rule)."""
    return name in PATH_PARAMETERS or name.endswith(PATH_SUFFIXES)


def keep_real_paths(raw: Mapping[str, Any], params: dict[str, Any]) -> None:
    """Put back into ``params`` a path parameter whose redaction changed an existing path.

    A path is not a secret; its redacted form names a file that does not exist, so the runbook
    would read nothing. Only values naming existing paths are restored (in place).
    """
    for key in raw:
        if not is_path_parameter(key):
            continue
        value = raw.get(key)
        values = value if isinstance(value, list) else [value]
        if value != params.get(key) and all(isinstance(v, str) and os.path.exists(v) for v in values):
            params[key] = value
