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

    A relative ``examples/…`` path missing here is the shipped example (``examples/suite.yaml``
    means the same from a checkout and from a wheel).
    """
    import yaml

    from ..resources import resolve_shipped_path

    path = resolve_shipped_path(path)

    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_PARAM_FILE_BYTES + 1)
        if len(raw) > MAX_PARAM_FILE_BYTES:
            raise RunbookError(f"{path}: a parameters file over {MAX_PARAM_FILE_BYTES} bytes is refused")
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except OSError as exc:
        raise RunbookError(f"{path}: cannot read the parameters file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RunbookError(f"{path}: the parameters file is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise RunbookError(f"{path}: not valid YAML{at}: {problem}") from exc
    if not isinstance(data, dict):
        raise RunbookError(f"{path}: a parameters file must hold a mapping, not {type(data).__name__}")
    return data


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
        out[key] = _check_type(runbook, key, declared[key], value)
    return out


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
