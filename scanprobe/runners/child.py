"""The child process of every command that runs a user's module: analyse, check, run, measure.

Started by ``runners.supervise`` as ``python -m scanprobe.runners.child SPEC.json`` (a
``messages.ChildSpec``); it writes a ``messages.ChildResult``. It analyses
the module with the library pipeline (so the prediction is made in the process that runs), then
hands the whole analysis back (inspect, check, graph: ``messages.write_report``), or profiles
each target, or hands it to the fix pipeline with itself as the runner (``step`` and
``measure``). After each step it rewrites the result file, so a crash, a kill for memory or
a timeout leaves what was measured so far and the step that was running.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
import traceback
import tracemalloc

import numpy as np

from scanprobe.errors import ScanprobeError, failure_text
from scanprobe.records import to_plain
from scanprobe.results import (BufferProfile, Measurement, NodeProfile, NotApplied, RunError, ScanTime,
                               TargetProfile, TwinProfile)
from scanprobe.runners.memory import RssSampler, available_bytes, peak_rss_bytes, rss_bytes
from scanprobe.runners.messages import Action, ChildResult, ChildSpec, write_report


class Result:
    """The result file the parent reads: rewritten after every step."""

    def __init__(self, path, runs=3, timeout=None):
        self.path = path
        self.runs = runs
        self.timeout = timeout
        self.msg = ChildResult()

    def step(self, text):
        self.msg.step = text
        self.save()

    def module_starts(self):
        self.msg.module_since = time.time()
        self.save()

    def save(self):
        self.msg.write(self.path)

    @contextlib.contextmanager
    def timed(self):
        """Calls of the user's function: the supervisor holds them to --timeout from here."""
        self.msg.running_since = time.time()
        self.save()
        try:
            yield
        finally:
            took = time.time() - self.msg.running_since
            self.msg.ran_s += took
            self.msg.running_since = None
            self.save()
        # calls that finished past --timeout between two polls of the supervisor are a timeout
        # all the same: the verdict must not depend on how busy the machine is
        if self.timeout is not None and took > self.timeout:
            self.msg.overran_s = took
            self.save()
            raise Overran(took)

    def measure(self, fn, values) -> Measurement:
        with self.timed():
            return measure(fn, values, self.runs)


class Overran(BaseException):
    """The user's calls took longer than --timeout (they ended before the supervisor saw it)."""


def values_for(live, specs):
    """Arrays for a target's explicit inputs: given values, else seeded random data of a given shape."""
    known = live.knowledge(specs)
    cap = live.captured
    labels = cap.explicit_labels()
    rng = np.random.default_rng(0)
    values, missing = [], []
    for i, var in enumerate(cap.explicit_inputs()):
        value, shape, _ = known.get(i, (None, None, "unknown"))
        dtype = str(var.type.dtype)
        if value is None and shape is not None:
            value = rng.standard_normal(shape).astype(dtype) if dtype.startswith("float") else np.zeros(shape, dtype=dtype)
        if value is None:
            missing.append((labels[i], var))
            continue
        values.append(np.asarray(value, dtype=dtype))
    if missing:
        names = ", ".join(f"{lab} ({getattr(v.type, 'ndim', '?')}-d {v.type.dtype})" for lab, v in missing)
        first, var = missing[0]
        example = "x".join(["8"] * (var.type.ndim or 1)) if var.type.ndim else "10"
        raise ScanprobeError(
            f"{live.target.name} needs values for its inputs: {names}",
            hint=f"give them with --input {first}={example} (random data of that shape) or "
            "SCANPROBE_INPUTS = {...} in the module",
        )
    return values


def predicted_peak(target, values) -> tuple[int, list[str]]:
    """Bytes that must coexist at least: every known top-level scan buffer plus the inputs."""
    total, parts = target.scan_buffer_bytes(), []
    if total:
        parts.append("scan buffers")
    inputs = sum(int(v.nbytes) for v in values)
    if inputs:
        total += inputs
        parts.append("inputs")
    return total, parts


def measure(fn, values, runs) -> Measurement:
    """Wall and CPU time, RSS above the pre-call level (sampled), tracemalloc peak of one call.

    The first call is a warm-up (timed on its own): JIT linkers (NUMBA) compile there, which
    would hide the call's own memory. Memory is measured on the second call.
    """
    m = Measurement()
    t0 = time.perf_counter()
    fn(*values)
    m.first_call_s = time.perf_counter() - t0
    rss0 = rss_bytes() or 0
    maxrss0 = peak_rss_bytes()
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        with RssSampler() as sampler:
            outputs = fn(*values)
    finally:
        sys.setswitchinterval(old)
    maxrss1 = peak_rss_bytes()
    m.rss_before_call = rss0
    m.rss_peak_above_precall = max(0, sampler.peak - rss0)
    m.rss_samples = sampler.samples
    m.maxrss_growth = max(0, maxrss1 - maxrss0)
    del outputs
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn(*values)
        _, m.tracemalloc_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    times, cpu = [], []
    for _ in range(max(1, runs)):
        c0, t0 = time.process_time(), time.perf_counter()
        fn(*values)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    m.runs = len(times)
    m.wall_median_s = statistics.median(times)
    m.wall_min_s = min(times)
    m.cpu_median_s = statistics.median(cpu)
    m.cpu_min_s = min(cpu)
    return m


def profiled_twin(live, specs, values, result) -> TwinProfile:
    """Per-node and per-buffer figures from a profiled twin on a VM linker.

    The user's own function is measured unprofiled; the twin (same mode when its linker is a VM,
    else the backend's CVM mode, e.g. for PyTensor's NUMBA, whose profiles are empty) is compiled
    with memory profiling, analysed on its own graph, and run once.
    """
    from scanprobe.pipeline import knowledge_of
    from scanprobe.walk.walker import analyse

    backend = live.backend
    mode, label = backend.profiled_mode(live.built)
    with backend.profiling():
        twin = backend.build(live.captured, mode, profile=True)
        twin.mode_label = label
        walked = analyse(backend, twin, live.captured, knowledge_of(live.session, specs)(live.captured, twin),
                         live.session)
        fn = backend.realize(twin)
        with result.timed():
            fn(*values)
    shapes, times = backend.profile_figures(fn)

    def nbytes(var):
        shp = shapes.get(var)
        if not isinstance(shp, tuple) or not hasattr(var.type, "dtype"):
            return None
        return int(np.prod(shp, dtype=np.int64)) * np.dtype(var.type.dtype).itemsize, list(shp)

    out = TwinProfile(mode=label, target=to_plain(walked.target))
    for scan in walked.target.scans:
        for b in scan.buffers:
            var = walked.buffer_vars.get((b.scan_id, b.role, b.index))
            got = nbytes(var) if var is not None else None
            out.buffers.append(BufferProfile(
                scan=scan.name, scan_id=scan.id, role=b.role, index=b.index, belongs_to=b.belongs_to,
                predicted_bytes=b.bytes, predicted_shape=list(b.shape) if b.shape else None,
                measured_bytes=got[0] if got else None, measured_shape=got[1] if got else None,
            ))
    nodes = []
    for node, secs in times:
        total = sum((nbytes(o) or (0,))[0] for o in node.outputs)
        nodes.append(NodeProfile(op=str(node.op)[:80], seconds=secs, output_bytes=total))
    nodes.sort(key=lambda n: -n.output_bytes)
    out.nodes = nodes[:12]
    steps = {s.name: s.n_steps.value for s in walked.target.scans if s.parent is None}
    for node, secs in times:
        if backend.is_scan(node):
            name = backend.scan_info(node.op).name or "scan_fn"
            out.scans.append(ScanTime(scan=name, seconds=secs, n_steps=steps.get(name)))
    return out


_JAX_HINT = (
    "JAX needs static shapes: give scans a constant n_steps and slices constant bounds "
    "(or profile with the default CPU linker: drop --device cuda / --mode JAX)"
)


def _is_jax(spec, target) -> bool:
    """The JAX route: --device cuda, or a JAX mode/linker asked for on the CPU."""
    return spec.device == "cuda" or "jax" in (target.mode.name + target.mode.linker).lower()


def _jax_failure(exc, target) -> str:
    """Say which scan cannot go to JAX and why, from the JAX error and the analysed graph."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    dynamic = [s for s in target.scans if s.n_steps.value is None or "shape" in s.n_steps.formula]
    where = ""
    if dynamic:
        s = dynamic[0]
        where = f"; scan `{s.name}` has n_steps = {s.n_steps.formula}, which JAX cannot treat as static"
    elif isinstance(exc, IndexError) or "static" in text.lower():
        # jax 0.10 says "Slice entries must be static integers", 0.12 raises an IndexError about
        # "static start/stop/step": the same cause, told by its type
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


def _profile(result, analysis, specs, spec):
    """Each target in turn; one that fails is reported with its cause, and the others still run."""
    for live in analysis.live:
        entry = TargetProfile(name=live.target.name, available=available_bytes(), memory_limit=spec.memory_limit)
        result.msg.profiles.append(entry)
        try:
            _profile_target(result, live, specs, spec, entry)
        except ScanprobeError as err:
            entry.error = RunError(err.message, err.hint or "", "error", [to_plain(f) for f in err.frames])
        except MemoryError:
            entry.error = RunError(f"MemoryError while {result.msg.step}",
                                   "the call ran out of memory: shrink what `scanprobe inspect` reports (full-history "
                                   "findings), or profile a smaller size", "memory")
        except Exception as exc:  # noqa: BLE001 - the user's function failed: said, and on to the next
            entry.error = RunError(f"{failure_text(exc).replace(':', ' while ' + result.msg.step + ':', 1)}",
                                   "the run failed in your code or its graph; the message says where", "error",
                                   traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:]))
        result.save()
    result.step("done")


def _profile_target(result, live, specs, spec, entry):
    target = live.target

    def save():
        result.save()

    values = values_for(live, specs)
    entry.predicted_peak, entry.predicted_parts = predicted_peak(target, values)
    limit, available = entry.memory_limit, entry.available
    budget = min(x for x in (available, limit) if x) if (available or limit) else None
    if budget is not None and entry.predicted_peak > budget:
        entry.refused = True
        save()
        return
    if _is_jax(spec, target):
        import importlib.util

        if importlib.util.find_spec("jax") is None:
            raise ScanprobeError(
                f"{target.name}: the JAX linker (--mode JAX, --device cuda) needs jax, and jax is not installed",
                hint="pip install jax (with CUDA: pip install 'jax[cuda12]') in this environment",
            )
    result.step(f"compiling {target.name}")
    t0 = time.perf_counter()
    try:
        fn = live.session.realize(live.captured)
        entry.link_seconds = time.perf_counter() - t0
        result.msg.rss_baseline = rss_bytes()  # --memory-limit counts from here
        result.step(f"running {target.name}")
        entry.measured = result.measure(fn, values)
    except Exception as exc:
        if _is_jax(spec, target):
            raise ScanprobeError(_jax_failure(exc, target), hint=_JAX_HINT) from None
        raise
    if _is_jax(spec, target):
        entry.device_memory = _jax_memory_stats()
    save()
    if spec.node_profile:
        result.step(f"profiling {target.name}")
        entry.profile = profiled_twin(live, specs, values, result)
        save()


def _budget(spec):
    """``fix --max-buffer``'s budget as the rules' settings, or None."""
    if not spec.max_buffer:
        return None
    from scanprobe.settings import Settings

    return Settings(max_buffer=spec.max_buffer)


def _budget_findings(analysis, spec) -> None:
    """``fix --max-buffer``: SP010's findings added to the report (what the fix must fit)."""
    settings = _budget(spec)
    if settings is None:
        return
    from scanprobe.analysis.history import classify
    from scanprobe.rules.sp010_buffer_over_budget import BufferOverBudget

    for live in analysis.live:
        analysis.report.findings += BufferOverBudget().check(live.target, classify(live.target), settings)


def _fix(result, analysis, specs, spec):
    from scanprobe.fixes.pipeline import fix_target, plan, site_of
    from scanprobe.pipeline import knowledge_of

    report = analysis.report
    settings = _budget(spec)
    for live in analysis.live:
        target = live.target
        result.step(f"looking for fixes of {target.name}")
        fix_plan = plan(live.backend, live.captured, target, [f for f in report.findings if f.target == target.name],
                        site_of(live.session), settings, live.session.pullbacks)
        if not fix_plan.rules:
            skipped = [n for n in fix_plan.notes() if n.reason]
            if skipped:
                result.msg.not_applied.append(NotApplied(name=target.name, rewrites=skipped))
            continue
        started = len(result.msg.fixes)

        def on_update(entry, started=started):
            del result.msg.fixes[started:]
            result.msg.fixes.append(entry)
            result.save()

        fix_target(
            live.backend, live.session, (live.captured, live.built, target), fix_plan, values_for(live, specs),
            result, knowledge_of(live.session, specs), spec.fixed_mode, on_update, settings,
        )
    result.step("done")


def main(spec_path: str) -> int:
    from scanprobe.runners.exits import guard_exits

    guard_exits(permanent=True)  # user code's os._exit (a thread, atexit) does not end this process
    spec = ChildSpec.read(spec_path)
    result = Result(spec.result, spec.runs, spec.timeout)
    from scanprobe.inputs import parse_input_spec
    from scanprobe.pipeline import analyse_module

    try:
        result.step("loading and analysing")
        if spec.action == Action.INSPECT:  # the supervisor holds loading to --timeout
            analysis = analyse_module(spec.spec, spec.backend, spec.mode, tuple(spec.inputs), spec.include_library,
                                      result, spec.settings, spec.pictures, spec.full_formulas)
            result.step("sending the report")
            write_report(analysis.report, spec.report)
            result.step("done")
            return 0
        analysis = analyse_module(spec.spec, spec.backend, spec.mode, tuple(spec.inputs))
        if spec.action == Action.FIX:
            _budget_findings(analysis, spec)
        result.msg.report = analysis.report.to_json()
        result.msg.loaded = True
        result.save()
        specs = [parse_input_spec(s) for s in spec.inputs]
        if spec.action == Action.FIX:
            _fix(result, analysis, specs, spec)
        else:
            _profile(result, analysis, specs, spec)
        return 0
    except Overran:
        return 124
    except ScanprobeError as err:
        result.msg.error = RunError(err.message, err.hint or "", frames=[to_plain(f) for f in err.frames])
        result.msg.error_type = type(err).__name__
        result.save()
        return 2
    except MemoryError:
        result.msg.error = RunError(f"MemoryError while {result.msg.step}", "", "memory")
        result.save()
        return 2
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        result.msg.error = RunError(failure_text(exc).replace(":", f" while {result.msg.step}:", 1), "",
                                    traceback="".join(tb[-6:]))
        result.save()
        return 2


if __name__ == "__main__":
    import os

    from scanprobe.runners.exits import SUPERVISOR, die_with_parent

    if os.environ.get(SUPERVISOR, "").isdigit():  # exec'd by runners.supervise: end with it
        die_with_parent(int(os.environ[SUPERVISOR]))
    sys.exit(main(sys.argv[1]))
