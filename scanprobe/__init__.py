"""scanprobe: find and explain oversized scan buffers in Theano-family graphs."""

from scanprobe.contracts import FIX_SCHEMA, PROFILE_SCHEMA, REPORT_SCHEMA, __version__

__all__ = ["FIX_SCHEMA", "PROFILE_SCHEMA", "REPORT_SCHEMA", "__version__", "fix"]


def fix(*args, **kwargs):
    """``scanprobe.fix(f)``: ``f`` with scanprobe's fixes applied, verified on its first call.

    See :mod:`scanprobe.api` (imported here on first use, so ``import scanprobe`` stays light).
    """
    from scanprobe.api import fix as _fix

    return _fix(*args, **kwargs)


def _document_fixes():
    from scanprobe.fixes.registry import with_fixes

    fix.__doc__ = with_fixes(fix.__doc__ or "")


_document_fixes()
