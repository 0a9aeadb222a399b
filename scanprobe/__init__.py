"""scanprobe: find and explain oversized scan buffers in Theano-family graphs."""

__version__ = "0.1.0"

#: Version of the machine-readable report (``--format json``). Bump on any key change.
REPORT_SCHEMA = "scanprobe.report/2"


def fix(*args, **kwargs):
    """``scanprobe.fix(f)``: ``f`` with scanprobe's fixes applied, verified on its first call.

    See :mod:`scanprobe.api` (imported here on first use, so ``import scanprobe`` stays light).
    """
    from scanprobe.api import fix as _fix

    return _fix(*args, **kwargs)
