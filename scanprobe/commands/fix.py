"""``scanprobe fix``: apply the fixes that apply to each target and prove them by rerunning.

The fixes and their proof live in ``scanprobe.fixes`` (the same pipeline as ``scanprobe.fix``);
they run in a supervised child. Nothing in the user's files is changed: the report shows the
code to write.
"""

from __future__ import annotations


def run_fix(spec, backend_name=None, mode=None, inputs=(), runs=3, timeout=600.0, progress=None, device="cpu",
            max_buffer=None):
    """Returns a ``results.FixResult``."""
    from scanprobe.commands.profile import child_target, run_error
    from scanprobe.results import FixResult
    from scanprobe.runners.messages import Action, ChildSpec
    from scanprobe.runners.supervise import run_child

    path, backend_name = child_target(spec, backend_name, device, "fix")
    # --device cuda: the original runs as the user has it (the reference, on the CPU); the fixed
    # function is compiled for the GPU through PyTensor's JAX linker and compared with it
    fixed_mode = "JAX" if device == "cuda" else None
    data = run_child(
        ChildSpec(spec=spec, action=Action.FIX, backend=backend_name, mode=mode, inputs=list(inputs), runs=runs,
                  device=device, fixed_mode=fixed_mode, max_buffer=max_buffer),
        timeout=timeout, memory_limit=None, on_step=progress.step if progress else None,
    )
    return FixResult(
        file=str(path), backend=backend_name, device=device, inspect=data.report, fixes=data.fixes,
        not_applied=data.not_applied, error=run_error(data, timeout, None, file=str(path)),
    )
