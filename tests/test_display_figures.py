"""One figure idiom (issue 22 item 5): every result that draws declares ``FIGURES`` and is shown with
``result.figure(name)``; each name resolves to a function, an unknown name is refused naming them."""

from __future__ import annotations

import importlib

import pytest

from vllm_runbooks.display import Figures, NoFigure
from vllm_runbooks.stage import RESULT_MODULES, result_class


def test_every_result_with_plots_declares_them_and_each_resolves() -> None:
    drawing = {name: result_class(name) for name in RESULT_MODULES if issubclass(result_class(name), Figures)}
    assert set(drawing) >= {
        "evidence_capture",
        "compatibility_decision",
        "canary_validation",
        "prefix_cache_check",
        "load_check",
        "fleet_survey",
        "validation_history",
    }
    for name, cls in drawing.items():
        assert cls.FIGURES, name
        for fig, where in cls.FIGURES.items():
            module, _, function = where.partition(":")
            assert callable(getattr(importlib.import_module(module), function)), (name, fig)


def test_an_unknown_figure_is_refused_and_a_missing_one_is_a_note() -> None:
    from vllm_runbooks.prefix_cache.result import PrefixCacheResult

    with pytest.raises(KeyError, match="one of ttft_by_request, cached_tokens_per_request"):
        PrefixCacheResult.figure(object.__new__(PrefixCacheResult), "pie")  # type: ignore[arg-type]
    empty = object.__new__(PrefixCacheResult)
    empty.experiment = None  # type: ignore[attr-defined]
    note = empty.figure("ttft_by_request")
    assert isinstance(note, NoFigure) and "ttft_by_request" in note._repr_html_()
