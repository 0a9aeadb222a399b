"""Ground truth: the scan buffers a backend really allocates when a function runs.

Every size test compares scanprobe's prediction with what this records, never with scanprobe's
own earlier output. Two views, both from a real call:

- ``hooked(...)``: every Scan node's thunk is wrapped (``Scan.make_thunk``), so each run of a
  scan, nested ones included, records the outer buffers it receives (mit_mot, mit_sot, sit_sot,
  untraced) and the per-step outputs it allocates (nit_sot). Works with the VM linkers (Python,
  C, CVM), where scans are thunks.
- ``evaluated(...)``: for a function on any linker (PyTensor's NUMBA too), the top-level scans'
  buffer variables of the optimized graph are computed by the function's own linker and their
  shapes read (the scan's allocations inside numba code follow those inputs).

Records: {"scan": name, "nested": depth, "role", "index", "shape", "dtype"}.
"""

from __future__ import annotations

import contextlib

import numpy as np

ROLES = ("mit_mot", "mit_sot", "sit_sot", "nit_sot", "shared")


def _role_of(backend, node):
    """[(role, index, outer input index or None, outer output index or None)] of a Scan node."""
    a = backend.scan_roles(node)
    out = []
    pos_in = {id(v): k for k, v in enumerate(node.inputs)}
    pos_out = {id(v): k for k, v in enumerate(node.outputs)}
    for role in ROLES:
        ins = getattr(a, f"outer_in_{role}")
        outs = getattr(a, f"outer_out_{role}")
        for i, v in enumerate(ins):
            if role == "nit_sot":
                o = outs[i] if i < len(outs) else None
                out.append(("nit_sot", i, None, pos_out.get(id(o)) if o is not None else None))
            elif getattr(v.type, "dtype", None) is not None:
                out.append(("untraced" if role == "shared" else role, i, pos_in.get(id(v)), None))
    return out


class Records(list):
    """Buffers recorded by the hooked thunks; ``reset()`` before another call of the same
    function records that call afresh (the thunks stay hooked after linking)."""

    def __init__(self):
        super().__init__()
        self.seen: set = set()

    def reset(self):
        self.clear()
        self.seen.clear()


@contextlib.contextmanager
def hooked(backend):
    """Record every scan buffer of the calls of functions linked inside the ``with`` (records
    appended to the yielded ``Records``, first run of each Scan node since the last reset)."""
    Scan = backend.api.Scan
    original = Scan.make_thunk
    records = Records()
    within: list = []  # names of the scans whose step is running (the path to a nested scan)
    seen = records.seen

    def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
        thunk = original(self, node, storage_map, compute_map, no_recycling, impl)
        ins = [storage_map[v] for v in node.inputs]
        outs = [storage_map[v] for v in node.outputs]
        roles = _role_of(backend, node)
        name = backend.scan_info(self).name or "scan_fn"

        def wrapped(*args, **kwargs):
            first = id(node) not in seen
            seen.add(id(node))
            here, path = len(within), "/".join(within)
            if first:
                for role, i, k_in, _ in roles:
                    if k_in is not None and ins[k_in][0] is not None:
                        arr = np.asarray(ins[k_in][0])
                        records.append({"scan": name, "nested": here, "within": path, "role": role, "index": i,
                                        "shape": list(arr.shape), "dtype": str(arr.dtype)})
            within.append(name)
            try:
                result = thunk(*args, **kwargs)
            finally:
                within.pop()
            if first:
                for role, i, _, k_out in roles:
                    if k_out is not None and outs[k_out][0] is not None:
                        arr = np.asarray(outs[k_out][0])
                        records.append({"scan": name, "nested": here, "within": path, "role": role, "index": i,
                                        "shape": list(arr.shape), "dtype": str(arr.dtype)})
            return result

        for attr in ("inputs", "outputs", "lazy", "perform"):
            if hasattr(thunk, attr):
                setattr(wrapped, attr, getattr(thunk, attr))
        return wrapped

    Scan.make_thunk = make_thunk
    try:
        yield records
    finally:
        Scan.make_thunk = original


def evaluated(backend, fn, values):
    """Top-level scan buffers of a compiled function's optimized graph, computed by its own
    linker (outer buffer inputs; nit_sot outputs) for ``values``."""
    probe, meta = _probe(backend, fn)
    if probe is None:
        return []
    arrays = probe(*values)
    return [{"scan": n, "nested": 0, "within": "", "role": r, "index": i, "shape": list(np.shape(a)), "dtype": str(np.asarray(a).dtype)}
            for (n, r, i), a in zip(meta, arrays)]


def _probe(backend, fn):
    """(a function of ``fn``'s inputs computing its top-level scans' buffer variables, their
    (scan, role, index)); (None, []) where it has no scan."""
    fg = fn.maker.fgraph
    wanted, meta = [], []
    for node in fg.toposort():
        if not backend.is_scan(node):
            continue
        name = backend.scan_info(node.op).name or "scan_fn"
        for role, i, k_in, k_out in _role_of(backend, node):
            var = node.inputs[k_in] if k_in is not None else node.outputs[k_out] if k_out is not None else None
            if var is None:
                continue
            wanted.append(var)
            meta.append((name, role, i))
    if not wanted:
        return None, []
    inputs = [v for v, inp in zip(fg.inputs, fn.maker.inputs) if not hasattr(v, "get_value")]
    # linked as it stands: the graph is the function's own optimized one (rewriting it again took
    # PyTensor 3.3 ~20 s per training function, and could only move it away from what runs)
    mode = fn.maker.mode.clone(optimizer=None)
    probe = backend.compile(inputs, wanted, mode=mode, accept_inplace=True, on_unused_input="ignore")
    return probe, meta


def run_recorded(backend, built, target, values, state, outputs):
    """(outputs, buffer records, hooked) of one call of a built (fixed) function: with the Scan
    thunks hooked where the linker has thunks (nested scans recorded too), else the top-level
    buffers its own linker computes (``evaluated``); shared state restored after."""
    linker = target.mode.linker.lower()
    if any(k in linker for k in ("vm", "py", "stack", "loop", "cvm")):
        with hooked(backend) as records:  # linked with the hooks in place
            out = outputs(backend.realize(built), values)
        state.restore()
        return out, list(records), True
    fn = backend.realize(built)  # a linker without thunks (numba)
    out = outputs(fn, values)
    state.restore()
    real = evaluated(backend, fn, values)
    state.restore()
    return out, real, False


def predicted(report_target) -> list:
    """The same records from a scanprobe ``records.Target`` (None shapes where symbolic)."""
    by_id = {s.id: s for s in report_target.scans}

    def path(s):
        names = []
        while s.parent is not None and s.parent in by_id:
            s = by_id[s.parent]
            names.append(s.name)
        return list(reversed(names))

    out = []
    for s in report_target.scans:
        p = path(s)
        for b in s.buffers:
            out.append({"scan": s.name, "nested": len(p), "within": "/".join(p), "role": b.role, "index": b.index,
                        "shape": list(b.shape) if b.shape is not None else None, "dtype": b.dtype})
    return out


def compare(pred: list, real: list) -> list:
    """Mismatches between predicted and real buffers, matched by scan name, the scans it is nested
    in, role and index. Scans that share all of these (two nested scans of one name in one step)
    are compared as a multiset: each predicted buffer must be one the run allocated under that key."""
    problems = []
    real_by: dict = {}
    for r in real:
        real_by.setdefault((r["scan"], r["within"], r["role"], r["index"]), []).append((r["shape"], r["dtype"]))
    for p in pred:
        group = real_by.get((p["scan"], p["within"], p["role"], p["index"]))
        if group is None or p["shape"] is None:
            continue  # a buffer the run never allocated (a scan that did not run, a removed output),
            # or one left symbolic (callers check those separately)
        mine = (p["shape"], p["dtype"])
        if mine in group:
            if len(group) > 1:
                group.remove(mine)
            continue
        really = " or ".join(f"{shape} {dtype}" for shape, dtype in group)
        problems.append(f"{p['scan']} (in {p['within'] or 'the function'}) {p['role']} #{p['index']}: "
                        f"predicted {p['shape']} {p['dtype']}, really {really}")
    return problems
