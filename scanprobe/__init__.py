"""scanprobe: find and explain oversized scan buffers in Theano-family graphs."""

from scanprobe.contracts import FIX_SCHEMA, PROFILE_SCHEMA, REPORT_SCHEMA, __version__

__all__ = ["FIX_SCHEMA", "PROFILE_SCHEMA", "REPORT_SCHEMA", "__version__", "fix", "inspect", "record_gradients"]


def inspect(obj, **kwargs):
    """``scanprobe.inspect(obj)``: the report of ``scanprobe inspect`` for a compiled function, a
    PyMC model or symbolic outputs (``inputs=[x]``), in this process; displayed as a table in a
    notebook. See :mod:`scanprobe.inspection` (imported on first use)."""
    from scanprobe.inspection import inspect as _inspect

    return _inspect(obj, **kwargs)


def load_ipython_extension(ipython):
    """``%load_ext scanprobe``: the ``%scanprobe`` line magic and ``%%scanprobe`` cell magic."""
    from scanprobe.ipython import load

    load(ipython)


def fix(*args, **kwargs):
    """``scanprobe.fix(f)``: ``f`` with scanprobe's fixes applied, verified on its first call.

    See :mod:`scanprobe.api` (imported here on first use, so ``import scanprobe`` stays light).
    """
    from scanprobe.api import fix as _fix

    return _fix(*args, **kwargs)


def record_gradients(backend_name=None):
    """``with scanprobe.record_gradients(): grads = T.grad(...)``: the scan gradients built inside
    are recorded for ``scanprobe.fix(..., max_buffer=...)``'s checkpoints (see :mod:`scanprobe.api`)."""
    from scanprobe.api import record_gradients as _record

    return _record(backend_name)


def _document_fixes():
    from scanprobe.fixes.registry import with_fixes

    fix.__doc__ = with_fixes(fix.__doc__ or "")


_document_fixes()
