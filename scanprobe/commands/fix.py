"""``scanprobe fix``: apply the fixes that apply to each target and prove them by rerunning.

- SP001: the rewrite an updated Theano applies: the backend's save-mem rewrite added to the
  target's own mode.
- SP003: the per-example gradients of a scan over the batch, from one backward pass (the
  sum-of-squares form) or from a per-example graph (backends/rewrites.py).
- SP002: a map scan vectorized.

Original and fixed functions run in a supervised child on the same inputs and shared state; a fix
whose outputs differ is reported as failed. Nothing in the user's files is changed: the report
shows the code to write.
"""

from __future__ import annotations


FIX_SCHEMA = "scanprobe.fix/1"


#: Added with the save-mem rewrite: shrinks the Alloc that the kept rows are sliced from.
SLICE_REWRITE = "local_subtensor_of_alloc"


def suggestion(backend: str, mode: str, tag: str) -> str:
    """The mode to write in the user's compile call (the one the verified fix used)."""
    base = mode if not mode.startswith("default") else "FAST_RUN"
    if base.startswith("Mode("):
        return f"your_mode.including({tag!r}, {SLICE_REWRITE!r})"
    return f"{backend}.compile.mode.get_mode({base!r}).including({tag!r}, {SLICE_REWRITE!r})"


def run_fix(spec, backend_name=None, mode=None, inputs=(), runs=3, timeout=600.0, progress=None, device="cpu") -> dict:
    from scanprobe.commands.profile import child_target
    from scanprobe.runners.supervise import run_child

    path, backend_name = child_target(spec, backend_name, device, "fix")
    # --device cuda: the original runs as the user has it (the reference, on the CPU); the fixed
    # function is compiled for the GPU through PyTensor's JAX linker and compared with it
    fixed_mode = "JAX" if device == "cuda" else None
    data = run_child(
        {"spec": spec, "backend": backend_name, "mode": mode, "inputs": list(inputs), "runs": runs, "action": "fix",
         "fixed_mode": fixed_mode},
        timeout=timeout, memory_limit=None, on_step=progress.step if progress else None,
    )
    from scanprobe.commands.profile import _error_of

    fixes = data.get("targets", [])
    for f in fixes:
        f["suggestion"] = suggestion(backend_name, f["mode"], f["tag"]) if "SP001" in f.get("rules", [f["rule"]]) else ""
    err = _error_of(data, timeout, None)
    failed = [f["name"] for f in fixes if not f.get("outputs_equal")]
    # findings that no verified fix covers (e.g. SP003 where the cost mixes examples)
    fixed_rules = {(f["name"], r) for f in fixes if f.get("outputs_equal") for r in f.get("rules", [f["rule"]])}
    unfixed = sorted({
        f"{x['target']}: {x['code']}"
        for x in (data.get("report") or {}).get("findings", [])
        if x.get("severity", "error") in ("error", "warning") and (x["target"], x["code"]) not in fixed_rules
    })
    return {
        "schema": FIX_SCHEMA,
        "file": str(path),
        "backend": backend_name,
        "device": device,
        "inspect": data.get("report"),
        "fixes": fixes,
        "not_applied": data.get("not_applied", []),
        "error": err,
        "summary": {
            "fixed": [f["name"] for f in fixes if f.get("outputs_equal")],
            "failed": failed,
            "unfixed": unfixed,
            "exit_code": 2 if err else (1 if failed or unfixed else 0),
        },
    }
