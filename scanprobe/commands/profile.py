"""``scanprobe profile``: the prediction of ``inspect`` beside what a real run measures.

Everything of the user's runs in a supervised child process (``runners``): this process only
starts it, watches its memory and time, and reads its result file.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

from scanprobe import __version__
from scanprobe.analysis.sizes import human_bytes
from scanprobe.errors import ScanprobeError

PROFILE_SCHEMA = "scanprobe.profile/1"
#: A measured buffer further than this from its prediction is itself reported.
GAP_TOLERANCE = 0.05


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
    if backend_name == "theano":
        raise ScanprobeError(
            "--device cuda: Theano's GPU backend needs pygpu/libgpuarray, which PyPI does not provide",
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
    from scanprobe.commands.inspect import split_target

    path, _ = split_target(spec)
    if not path.exists():
        raise ScanprobeError(f"no such file: {path}", hint=f"give the path of a Python file: scanprobe {command} model.py[:TARGET]")
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
) -> dict:
    """Profile every target of a module; returns the profile report (a dict, see docs)."""
    from scanprobe.runners.supervise import run_child

    path, backend_name = child_target(spec, backend_name, device, "profile")
    if device == "cuda":
        mode = "JAX"
    child_spec = {
        "spec": spec,
        "backend": backend_name,
        "mode": mode,
        "inputs": list(inputs),
        "runs": runs,
        "memory_limit": memory_limit,
        "node_profile": node_profile,
        "device": device,
    }
    step = progress.step if progress else None
    data = run_child(child_spec, timeout=timeout, memory_limit=memory_limit, on_step=step)
    out = {
        "schema": PROFILE_SCHEMA,
        "scanprobe": __version__,
        "file": str(path),
        "device": device,
        "inspect": data.get("report"),
        "targets": [_target_entry(t) for t in data.get("targets", [])],
        "exit": data.get("exit"),
        "error": None,
    }
    out["error"] = _error_of(data, timeout, memory_limit)
    findings = len((out["inspect"] or {}).get("findings", []))
    gaps = sum(len(t.get("gaps", [])) for t in out["targets"])
    out["summary"] = {
        "findings": findings,
        "gaps": gaps,
        "refused": [t["name"] for t in out["targets"] if t.get("refused")],
        "exit_code": 2 if out["error"] else (1 if findings or gaps else 0),
    }
    return out


def _target_entry(t: dict) -> dict:
    entry = dict(t)
    gaps = []
    for b in (t.get("profile") or {}).get("buffers", []):
        p, m = b.get("predicted_bytes"), b.get("measured_bytes")
        b["gap"] = None
        if p is not None and m is not None:
            b["gap"] = (m - p) / p if p else (0.0 if m == 0 else 1.0)
            if abs(b["gap"]) > GAP_TOLERANCE:
                gaps.append(f"{b['belongs_to']} of `{b['scan']}`: predicted {p} B, measured {m} B")
    entry["gaps"] = gaps
    return entry


def _error_of(data: dict, timeout, memory_limit):
    """The reason the run did not complete, as {message, hint}, or None."""
    ex = data.get("exit") or {}
    step = data.get("step", "starting")
    for t in data.get("targets", []):
        if t.get("refused"):
            budget = []
            if t.get("available") and t["predicted_peak"] > t["available"]:
                budget.append(f"{human_bytes(t['available'])} available on this machine")
            if t.get("memory_limit") and t["predicted_peak"] > t["memory_limit"]:
                budget.append(f"--memory-limit {human_bytes(t['memory_limit'])}")
            return {
                "message": f"refused to run {t['name']}: predicted peak {human_bytes(t['predicted_peak'])} "
                f"({' + '.join(t.get('predicted_parts', []))}) exceeds {' and '.join(budget)}",
                "hint": "run `scanprobe inspect` to see what holds the memory (SP001 findings can be shrunk), "
                "or profile a smaller size"
                + (" or raise --memory-limit" if t.get("memory_limit") and (not t.get("available") or t["memory_limit"] < t["available"]) else ""),
                "kind": "refused",
            }
    if ex.get("killed_for") == "memory":
        return {
            "message": f"stopped while {step}: the run passed --memory-limit {human_bytes(memory_limit)} "
            f"(RSS grew by {human_bytes(ex.get('peak_rss', 0) - (ex.get('rss_baseline') or 0))})",
            "hint": "raise --memory-limit, or shrink what `scanprobe inspect` reports",
            "kind": "memory",
        }
    if ex.get("killed_for") == "timeout":
        return {
            "message": f"stopped while {step}: still running after --timeout {timeout:g} s",
            "hint": "raise --timeout, or profile a smaller size (a hang in user code ends here too)",
            "kind": "timeout",
        }
    if data.get("error"):
        err = dict(data["error"])
        err.setdefault("kind", "error")
        if not err.get("hint"):
            err["hint"] = "the run failed in your code or its graph; the message says where"
        return err
    if ex.get("signal"):
        return {
            "message": f"the run crashed with signal {ex['signal']} while {step}",
            "hint": "a crash in compiled code: rerun with a smaller size or FAST_COMPILE to narrow it down",
            "kind": "crash",
            "log_tail": data.get("log_tail", ""),
        }
    if ex.get("code") not in (0, None):
        return {
            "message": f"the run exited with code {ex.get('code')} while {step}",
            "hint": "see the output of your module above",
            "kind": "crash",
            "log_tail": data.get("log_tail", ""),
        }
    return None
