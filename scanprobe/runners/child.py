"""The child process of ``scanprobe profile``: analyse, check the prediction, run, measure.

Started by ``runners.supervise`` as ``python -m scanprobe.runners.child SPEC.json``. After each
step it rewrites the result file, so a crash, a kill for memory or a timeout leaves what was
measured so far and the step that was running.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
import tracemalloc
import traceback

import numpy as np

from scanprobe.errors import ScanprobeError
from scanprobe.records import to_plain
from scanprobe.runners.memory import RssSampler, available_bytes, rss_bytes


class Result:
    def __init__(self, path):
        self.path = path
        self.data = {"targets": [], "notes": [], "error": None, "step": "starting"}

    def step(self, text):
        self.data["step"] = text
        self.save()

    def save(self):
        with open(self.path, "w") as fh:
            json.dump(self.data, fh, default=str)


def _values(cap, built, target, module_inputs, specs):
    """Arrays for the explicit inputs: given values, else seeded random data of a given shape."""
    from scanprobe.inputs import knowledge_for

    fg_inputs = built.maker.fgraph.inputs
    known = knowledge_for(cap, fg_inputs, module_inputs, specs, set())
    labels = cap.explicit_labels()
    rng = np.random.default_rng(0)
    values, missing = [], []
    for i, var in enumerate(cap.explicit_inputs()):
        value, shape, source = known.get(i, (None, None, "unknown"))
        dtype = str(var.type.dtype)
        if value is None and shape is not None:
            if dtype.startswith("float"):
                value = rng.standard_normal(shape).astype(dtype)
            else:
                value = np.zeros(shape, dtype=dtype)
        if value is None:
            missing.append((labels[i], var))
            continue
        values.append(np.asarray(value, dtype=dtype))
    if missing:
        names = ", ".join(f"{lab} ({getattr(v.type, 'ndim', '?')}-d {v.type.dtype})" for lab, v in missing)
        first, var = missing[0]
        example = "x".join(["8"] * (var.type.ndim or 1)) if var.type.ndim else "10"
        raise ScanprobeError(
            f"{target.name} needs values for its inputs: {names}",
            hint=f"give them with --input {first}={example} (random data of that shape) or "
            "SCANPROBE_INPUTS = {...} in the module",
        )
    return values


def _predicted_peak(target, values) -> tuple[int, list[str]]:
    """Bytes that must coexist at least: every known scan buffer plus the inputs."""
    total, parts = 0, []
    for scan in target.scans:
        if scan.parent is not None:
            continue
        for b in scan.buffers:
            if b.bytes:
                total += b.bytes
    if total:
        parts.append("scan buffers")
    inputs = sum(int(v.nbytes) for v in values)
    if inputs:
        total += inputs
        parts.append("inputs")
    return total, parts


def _measure(fn, values, runs):
    """Wall time, RSS above the pre-call level (sampled), tracemalloc peak of one call.

    The first call is a warm-up (timed on its own): JIT linkers (NUMBA) compile there, which
    would hide the call's own memory. Memory is measured on the second call.
    """
    out = {}
    t0 = time.perf_counter()
    fn(*values)
    out["first_call_s"] = time.perf_counter() - t0
    rss0 = rss_bytes() or 0
    maxrss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        with RssSampler() as sampler:
            outputs = fn(*values)
    finally:
        sys.setswitchinterval(old)
    maxrss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["rss_before_call"] = rss0
    out["rss_peak_above_precall"] = max(0, sampler.peak - rss0)
    out["rss_samples"] = sampler.samples
    out["maxrss_growth"] = max(0, maxrss1 - maxrss0)
    del outputs
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn(*values)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out["tracemalloc_peak"] = peak
    times = []
    for _ in range(max(1, runs)):
        t0 = time.perf_counter()
        fn(*values)
        times.append(time.perf_counter() - t0)
    out["runs"] = len(times)
    out["wall_median_s"] = statistics.median(times)
    out["wall_min_s"] = min(times)
    return out


def _profiled_twin(backend, session, cap, built, target, module_inputs, specs, values):
    """Per-node and per-buffer figures from a profiled twin on a VM linker.

    The user's own function is measured unprofiled; the twin (same mode when its linker is a VM,
    else the backend's CVM mode, e.g. for PyTensor's NUMBA, whose profiles are empty) is compiled
    with memory profiling, analysed on its own graph, and run once.
    """
    from scanprobe.inputs import knowledge_for

    api = backend.api
    linker = target.mode.linker.lower()
    vm_like = any(k in linker for k in ("vm", "cvm", "py", "stack", "loop"))
    mode = built.mode if vm_like else api.get_mode("CVM")
    label = built.mode_label if vm_like else "CVM (twin: the user's linker records no profile)"
    cfg = api.config
    old = (cfg.profile, cfg.profile_memory)
    cfg.profile, cfg.profile_memory = True, True
    try:
        twin_built = backend.build(cap, mode, profile=True)
        twin_built.mode_label = label
        twin_target = backend.analyse(twin_built, cap, knowledge_for(cap, twin_built.maker.fgraph.inputs, module_inputs, specs, set()), session)
        fn = backend.realize(twin_built)
        fn(*values)
    finally:
        cfg.profile, cfg.profile_memory = old
    prof = fn.profile
    shapes = getattr(prof, "variable_shape", {}) or {}
    apply_time = getattr(prof, "apply_time", {}) or {}

    def nbytes(var):
        shp = shapes.get(var)
        if not isinstance(shp, tuple) or not hasattr(var.type, "dtype"):
            return None
        return int(np.prod(shp, dtype=np.int64)) * np.dtype(var.type.dtype).itemsize, list(shp)

    buffers = []
    for scan in twin_target.scans:
        for b in scan.buffers:
            var = twin_built.buffer_vars.get((b.scan_id, b.role, b.index))
            got = nbytes(var) if var is not None else None
            buffers.append(
                {
                    "scan": scan.name,
                    "scan_id": scan.id,
                    "role": b.role,
                    "index": b.index,
                    "belongs_to": b.belongs_to,
                    "predicted_bytes": b.bytes,
                    "predicted_shape": list(b.shape) if b.shape else None,
                    "measured_bytes": got[0] if got else None,
                    "measured_shape": got[1] if got else None,
                }
            )
    nodes = []
    for key, secs in apply_time.items():
        node = key[1] if isinstance(key, tuple) else key
        out_bytes = 0
        for o in node.outputs:
            got = nbytes(o)
            out_bytes += got[0] if got else 0
        nodes.append({"op": str(node.op)[:80], "seconds": float(secs), "output_bytes": out_bytes})
    nodes.sort(key=lambda n: -n["output_bytes"])
    scans = []
    steps = {s.name: s.n_steps.value for s in twin_target.scans if s.parent is None}
    for key, secs in apply_time.items():
        node = key[1] if isinstance(key, tuple) else key
        if isinstance(node.op, api.Scan):
            name = node.op.name or "scan_fn"
            scans.append({"scan": name, "seconds": float(secs), "n_steps": steps.get(name)})
    return {"mode": label, "buffers": buffers, "nodes": nodes[:12], "scans": scans, "target": to_plain(twin_target)}


_JAX_HINT = (
    "JAX needs static shapes: give scans a constant n_steps and slices constant bounds "
    "(or profile with the default CPU linker: drop --device cuda / --mode JAX)"
)


def _is_jax(spec, target) -> bool:
    """The JAX route: --device cuda, or a JAX mode/linker asked for on the CPU."""
    return spec.get("device") == "cuda" or "jax" in (target.mode.name + target.mode.linker).lower()


def _jax_failure(exc, target) -> str:
    """Say which scan cannot go to JAX and why, from the JAX error and the analysed graph."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    dynamic = [s for s in target.scans if s.n_steps.value is None or "shape" in s.n_steps.formula]
    where = ""
    if dynamic:
        s = dynamic[0]
        where = f"; scan `{s.name}` has n_steps = {s.n_steps.formula}, which JAX cannot treat as static"
    elif "Slice entries must be static" in text:
        where = "; a slice inside a scan step has bounds that depend on the step (as in seed 000)"
    return f"{target.name} cannot run on the JAX linker: {type(exc).__name__}: {text}{where}"


def _jax_memory_stats() -> dict | None:
    """Peak device memory as JAX reports it (None where the device keeps no statistics)."""
    try:
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        return {"device": str(jax.devices()[0]), "peak_bytes_in_use": stats.get("peak_bytes_in_use"),
                "bytes_in_use": stats.get("bytes_in_use")}
    except Exception:  # noqa: BLE001 - a measurement, not a requirement
        return None


class _SharedState:
    """Copies of the shared values a function reads, to run two functions from the same state."""

    def __init__(self, fgraph):
        self.saved = []
        for var in fgraph.inputs:
            container = getattr(var, "container", None)
            if container is not None:
                self.saved.append((container, np.array(container.value, copy=True)))

    def restore(self):
        for container, value in self.saved:
            container.value = np.array(value, copy=True)


def _outputs(fn, values):
    out = fn(*values)
    out = out if isinstance(out, (list, tuple)) else [out]
    return [np.array(o, copy=True) for o in out]


def _run_from(state, fn, values, spec):
    """Outputs of one call and the measurements of ``fn``, each starting from the saved state."""
    state.restore()
    outputs = _outputs(fn, values)
    state.restore()
    measured = _measure(fn, values, spec.get("runs", 3))
    state.restore()
    return outputs, measured


def _fix_all(result, report, keep, specs, spec) -> int:
    """Apply every fix that applies to each target and prove it by rerunning.

    SP001: the backend's save-mem rewrite (and the slice-of-alloc rewrite) added to the user's mode.
    SP003 / SP002: graph rewrites of the user's own graph (backends/rewrites.py). Original and fixed
    functions run on the same inputs, each from the same saved shared state; a fix whose outputs
    differ is reported as failed."""
    from scanprobe.analysis.history import classify
    from scanprobe.commands.fix import SLICE_REWRITE
    from scanprobe.inputs import knowledge_for
    from scanprobe.rules import by_code

    flagged = {f.target for f in report.findings if f.code == "SP001" and f.severity != "info"}
    for session, cap, built, target in keep:
        backend = session.backend
        result.step(f"looking for graph fixes of {target.name}")
        rewrites = backend.graph_fixes(cap)
        applied = [r for r in rewrites if r.form]
        sp001 = target.name in flagged
        if not sp001 and not applied:
            skipped = [r.plain() for r in rewrites if r.reason]
            if skipped:
                result.data.setdefault("not_applied", []).append({"name": target.name, "rewrites": skipped})
            continue
        rules = (["SP001"] if sp001 else []) + sorted({r.rule for r in applied})
        entry = {
            "name": target.name,
            "rule": rules[0],
            "rules": rules,
            "tag": target.mode.save_mem_tag if sp001 else "",
            "mode": target.mode.name,
            "rewrites": [r.plain() for r in rewrites],
        }
        result.data["targets"].append(entry)
        values = _values(cap, built, target, session.module_inputs(), specs)
        state = _SharedState(built.maker.fgraph)
        result.step(f"running {target.name} as it is")
        entry["before"] = {"predicted_peak": _predicted_peak(target, values)[0]}
        before_out, entry["before"]["measured"] = _run_from(state, session.realize(cap), values, spec)
        result.save()
        result.step(f"rewriting {target.name}")
        fixed_cap = backend.rewritten(cap, applied) if applied else cap
        mode = built.mode
        if spec.get("fixed_mode"):  # --device cuda: the fixed function on the device's linker
            mode = backend.resolve_mode(spec["fixed_mode"])[0]
            entry["fixed_mode"] = spec["fixed_mode"]
        if sp001:
            # the save-mem rewrite, and the rewrite that shrinks the Alloc its slice reads from
            # (without it, FAST_COMPILE keeps a full-size zero Alloc sliced to the rows kept)
            mode = mode.including(target.mode.save_mem_tag, SLICE_REWRITE)
        fixed_built = backend.build(fixed_cap, mode)
        fixed_built.mode_label = built.mode_label + (f" + {target.mode.save_mem_tag}" if sp001 else "")
        fixed_target = backend.analyse(
            fixed_built, fixed_cap,
            knowledge_for(fixed_cap, fixed_built.maker.fgraph.inputs, session.module_inputs(), specs, set()), session,
        )
        remaining = by_code("SP001").check(fixed_target, classify(fixed_target))
        entry["after"] = {"predicted_peak": _predicted_peak(fixed_target, values)[0], "remaining_sp001": len(remaining)}
        result.step(f"running {target.name} fixed")
        after_out, entry["after"]["measured"] = _run_from(state, backend.realize(fixed_built), values, spec)
        _compare(entry, before_out, after_out)
        entry["site"] = to_plain(cap.site) if cap.site else None
        result.save()
    result.step("done")
    return 0


#: Tolerance of the comparison of original and fixed outputs, by the outputs' precision.
TOLERANCE = {"float64": {"rtol": 1e-10, "atol": 1e-12}, "other": {"rtol": 1e-5, "atol": 1e-8}}


def _compare(entry, before_out, after_out):
    doubles = all(np.asarray(a).dtype == np.float64 for a in before_out if np.asarray(a).dtype.kind == "f")
    tol = TOLERANCE["float64" if doubles and before_out else "other"]
    diffs = [float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size and a.shape == b.shape else 0.0
             for a, b in zip(before_out, after_out)]
    entry["max_abs_diff"] = max(diffs) if diffs else 0.0
    entry["tolerance"] = tol
    entry["outputs_equal"] = len(before_out) == len(after_out) and all(
        a.shape == b.shape and np.allclose(a, b, **tol) for a, b in zip(before_out, after_out)
    )


def main(spec_path: str) -> int:
    with open(spec_path) as fh:
        spec = json.load(fh)
    result = Result(spec["result"])
    from scanprobe.commands.inspect import run_inspect
    from scanprobe.inputs import parse_input_spec
    from scanprobe.report import json_report

    keep: list = []
    try:
        result.step("loading and analysing")
        report = run_inspect(
            spec["spec"], spec.get("backend"), spec.get("mode"), tuple(spec.get("inputs", ())), False, None, keep
        )
        result.data["report"] = json_report.as_dict(report)
        result.save()
        specs = [parse_input_spec(s) for s in spec.get("inputs", ())]
        if spec.get("action") == "fix":
            return _fix_all(result, report, keep, specs, spec)
        limit = spec.get("memory_limit")
        available = available_bytes()
        for session, cap, built, target in keep:
            entry = {"name": target.name}
            result.data["targets"].append(entry)
            module_inputs = session.module_inputs()
            values = _values(cap, built, target, module_inputs, specs)
            predicted, parts = _predicted_peak(target, values)
            entry["predicted_peak"] = predicted
            entry["predicted_parts"] = parts
            entry["available"] = available
            entry["memory_limit"] = limit
            budget = min(x for x in (available, limit) if x) if (available or limit) else None
            if budget is not None and predicted > budget:
                entry["refused"] = True
                result.save()
                continue
            result.step(f"compiling {target.name}")
            t0 = time.perf_counter()
            try:
                fn = session.realize(cap)
                entry["link_seconds"] = time.perf_counter() - t0
                result.data["rss_baseline"] = rss_bytes()  # --memory-limit counts from here
                result.step(f"running {target.name}")
                entry["measured"] = _measure(fn, values, spec.get("runs", 3))
            except Exception as exc:
                if _is_jax(spec, target):
                    raise ScanprobeError(_jax_failure(exc, target), hint=_JAX_HINT) from None
                raise
            if _is_jax(spec, target):
                entry["device_memory"] = _jax_memory_stats()
            result.save()
            if spec.get("node_profile", True):
                result.step(f"profiling {target.name}")
                entry["profile"] = _profiled_twin(
                    session.backend, session, cap, built, target, module_inputs, specs, values
                )
            result.step("done")
        return 0
    except ScanprobeError as err:
        result.data["error"] = {"message": err.message, "hint": err.hint, "frames": [to_plain(f) for f in err.frames]}
        result.save()
        return 2
    except MemoryError:
        result.data["error"] = {"message": f"MemoryError while {result.data['step']}", "hint": "", "kind": "memory"}
        result.save()
        return 2
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        result.data["error"] = {
            "message": f"{type(exc).__name__} while {result.data['step']}: {str(exc).splitlines()[0] if str(exc) else ''}",
            "hint": "",
            "traceback": "".join(tb[-6:]),
        }
        result.save()
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
