"""``scanprobe inspect``: load a module, compile its targets once, report every scan buffer."""

from __future__ import annotations


def run_inspect(spec, backend_name=None, mode=None, inputs=(), include_library=False, progress=None,
                settings=None, pictures=False, full_formulas=False, timeout=None):
    """Analyse every target of a user module; returns a ``results.Report``."""
    from scanprobe.pipeline import analyse_module

    return analyse_module(spec, backend_name, mode, tuple(inputs), include_library, progress, settings,
                          pictures, full_formulas, timeout).report
