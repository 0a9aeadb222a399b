"""``scanprobe profile``: the prediction of ``inspect`` beside what a real run measures.

Everything of the user's runs in a supervised child process (``runners``): this process only
starts it, watches its memory and time, and reads its result file.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

from scanprobe.analysis.sizes import human_bytes
from scanprobe.errors import ScanprobeError
from scanprobe.records import to_plain


def _check_device(device: str, backend_name: str | None) -> None:
    """Fail early, with the reason, when --device cuda cannot work here."""
    if device == "cpu":
        return
    if device != "cuda":
        raise ScanprobeError(f"unknown device {device!r}", hint="use --device cpu or --device cuda")
    has_gpu = os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is not None
    if not has_gpu:
        raise ScanprobeError(
            "--device cuda: no CUDA GPU on this machine (no /dev/nvidia0, no nvidia-smi)",
            hint="run on a machine with an NVIDIA GPU, or drop --device to profile on the CPU",
        )
    if backend_name is not None:
        from scanprobe.backends import get_backend

        reason = get_backend(backend_name).no_gpu_reason
        if reason:
            raise ScanprobeError(
                f"--device cuda: {reason}",
                hint="profile the PyTensor port of the model (its JAX linker runs on CUDA), or use the CPU",
            )
    if importlib.util.find_spec("jax") is None:
        raise ScanprobeError(
            "--device cuda runs PyTensor through its JAX linker, and jax is not installed",
            hint="pip install 'jax[cuda12]' in this environment",
        )


def child_target(spec: str, backend_name: str | None, device: str, command: str):
    """(path, backend name) of a module a command will run in a child, checked: the file
    exists, the backend is resolved, and --device can work here."""
    from scanprobe.pipeline import check_file, split_target

    path, _ = split_target(spec)
    check_file(path, command)
    if backend_name is None:
        from scanprobe.backends import resolve

        backend_name = resolve(None, path)[0].name
    _check_device(device, backend_name)
    return path, backend_name


def run_profile(
    spec: str,
    backend_name: str | None = None,
    mode: str | None = None,
    inputs: tuple[str, ...] = (),
    runs: int = 3,
    timeout: float = 600.0,
    memory_limit: int | None = None,
    device: str = "cpu",
    node_profile: bool = True,
    progress=None,
):
    """Profile every target of a module; returns a ``results.ProfileResult``."""
    from scanprobe.results import ProfileResult
    from scanprobe.runners.messages import Action, ChildSpec
    from scanprobe.runners.supervise import run_child

    path, backend_name = child_target(spec, backend_name, device, "profile")
    if device == "cuda":
        mode = "JAX"
    child_spec = ChildSpec(spec=spec, action=Action.PROFILE, backend=backend_name, mode=mode, inputs=list(inputs),
                           runs=runs, memory_limit=memory_limit, node_profile=node_profile, device=device)
    data = run_child(child_spec, timeout=timeout, memory_limit=memory_limit, on_step=progress.step if progress else None)
    targets = data.profiles
    return ProfileResult(
        file=str(path), device=device, inspect=data.report, targets=targets,
        exit=to_plain(data.exit) if data.exit else None,
        error=run_error(data, timeout, memory_limit, targets, file=str(path)),
    )


def run_error(data, timeout, memory_limit, targets=(), file="FILE"):
    """The reason a child run (``messages.ChildResult``) did not complete (``results.RunError``), or None."""
    from scanprobe.results import RunError
    from scanprobe.runners.messages import Exit, KilledFor

    ex = data.exit or Exit()
    step = data.step
    for t in targets:
        if t.refused:
            budget = []
            if t.available and t.predicted_peak > t.available:
                budget.append(f"{human_bytes(t.available)} available on this machine")
            if t.memory_limit and t.predicted_peak > t.memory_limit:
                budget.append(f"--memory-limit {human_bytes(t.memory_limit)}")
            raise_limit = t.memory_limit and (not t.available or t.memory_limit < t.available)
            return RunError(
                f"refused to run {t.name}: predicted peak {human_bytes(t.predicted_peak)} "
                f"({' + '.join(t.predicted_parts)}) exceeds {' and '.join(budget)}",
                f"run `scanprobe inspect {file}` to see what holds the memory (full-history "
                "findings can be shrunk), or profile a smaller size" + (" or raise --memory-limit" if raise_limit else ""),
                "refused",
            )
    if ex.killed_for == KilledFor.MEMORY:
        return RunError(
            f"stopped while {step}: the run passed --memory-limit {human_bytes(memory_limit)} "
            f"(RSS grew by {human_bytes(ex.peak_rss - (ex.rss_baseline or 0))})",
            "raise --memory-limit, or shrink what `scanprobe inspect` reports", "memory",
        )
    if ex.killed_for == KilledFor.LOAD_MEMORY:
        from scanprobe.runners.supervise import LOAD_ALLOWANCE

        return RunError(
            f"stopped while {step}: loading, compiling and analysing grew by more than --memory-limit "
            f"{human_bytes(memory_limit)} + {human_bytes(LOAD_ALLOWANCE)} allowed for the backend and compiling "
            f"(peak RSS {human_bytes(ex.peak_rss)})",
            "something at import allocates that much (data loading?): guard it with if __name__ == '__main__', "
            "or raise --memory-limit", "memory",
        )
    if ex.killed_for == KilledFor.TIMEOUT:
        overran = data.overran_s
        said = f"its calls took {overran:.3g} s, more than" if overran is not None else "still running after"
        return RunError(
            f"stopped while {step}: {said} --timeout {timeout:g} s",
            "raise --timeout, or profile a smaller size (a hang in user code ends here too)", "timeout",
        )
    if ex.killed_for == KilledFor.LOAD_TIMEOUT and data.loaded:
        done = [t.name for t in data.profiles if t.measured is not None]
        done += [f.name for f in data.fixes if f.outputs_equal is not None]
        kept = f"; the results of {', '.join(done)} are kept" if done else ""
        return RunError(
            f"stopped while {step}: that step took more than {ex.load_timeout:g} s outside the calls of your "
            f"function{kept}",
            "compiling a very large graph? run the target alone (FILE:TARGET) or in FAST_COMPILE (--mode)", "timeout",
        )
    if ex.killed_for == KilledFor.LOAD_TIMEOUT:
        return RunError(
            f"stopped while {step}: loading, compiling and analysing took more than {ex.load_timeout:g} s",
            "an endless loop at import? code under if __name__ == '__main__': does not run", "timeout",
        )
    if data.error is not None:
        err = data.error
        return RunError(
            err.message, err.hint or "the run failed in your code or its graph; the message says where",
            err.kind, err.frames, err.traceback,
        )
    failed = [t for t in targets if getattr(t, "error", None) is not None]
    if failed:  # the first target whose run failed (each carries its own cause)
        err = failed[0].error
        if len(failed) > 1 or len(targets) > 1:
            others = ", ".join(t.name for t in failed[1:])
            err = RunError(err.message, err.hint + (f"; also failed: {others}" if others else ""), err.kind,
                           err.frames, err.traceback)
        return err
    if ex.signal:
        return RunError(
            f"the run crashed with signal {ex.signal} while {step}",
            "a crash in compiled code: rerun with a smaller size or FAST_COMPILE to narrow it down",
            "crash", log_tail=data.log_tail,
        )
    if ex.code not in (0, None):
        return RunError(
            f"the run exited with code {ex.code} while {step}", "see the output of your module above",
            "crash", log_tail=data.log_tail,
        )
    return None
