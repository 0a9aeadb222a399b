"""SP001's fix: the rewrite an updated Theano applies, the backend's save-mem rewrite, added to the
target's own mode (with the rewrite that shrinks the Alloc the kept rows are sliced from)."""

from __future__ import annotations

from scanprobe.rules import rule
from scanprobe.rules.sp001_full_history_buffer import FullHistoryBuffer

RULE = rule(FullHistoryBuffer).code
#: a fix of the compilation mode, not of the graph (fixes/registry.py)
MODE_FIX = True


def applies(findings) -> bool:
    """A counted SP001 finding (removable history) among a target's findings."""
    return any(f.code == RULE and f.counts for f in findings)


def fixed_mode(backend, mode):
    return backend.with_save_mem(mode)


def suggestion(backend, mode_label: str) -> str:
    """The mode to write in the user's compile call (the one the verified fix used)."""
    return backend.save_mem_code(mode_label)
