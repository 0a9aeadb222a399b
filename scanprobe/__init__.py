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

    The fixes (one per rule, from fixes/registry.py; tests/test_fix_samples.py keeps this list
    equal to the registry's, which ``import scanprobe`` does not import):

    - SP001 full-history-buffer: save-mem: the backend's rewrite that keeps only the rows a scan reads, added to the mode
    - SP002 independent-iterations: vectorize: a map scan as one batched computation
    - SP003 per-step-batch-work: per-example: the gradients from one backward pass (the sum-of-squares form, or the step's graph sliced to its row)
    - SP006 reduction-over-history: accumulate: a running value in the step in place of the kept history (sum, mean, product, max, min, dot over time)
    - SP007 backward-tape: running tape: the gradient scan's zero-fed tape rewritten as a running state (2 rows after save-mem)
    - SP008 per-step-gradient-terms: terms in the loop: the mode's `more_mem` rewrites excluded, so each gradient accumulates in the backward scan
    - SP010 buffer-over-budget: checkpointed history (with --max-buffer): a forward scan whose history a gradient reads kept every k steps, each segment recomputed in the backward pass
    """
    from scanprobe.api import fix as _fix

    return _fix(*args, **kwargs)


def record_gradients(backend_name=None):
    """``with scanprobe.record_gradients(): grads = T.grad(...)``: the scan gradients built inside
    are recorded for ``scanprobe.fix(..., max_buffer=...)``'s checkpoints (see :mod:`scanprobe.api`)."""
    from scanprobe.api import record_gradients as _record

    return _record(backend_name)
