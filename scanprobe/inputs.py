"""Input specifications: ``--input NAME=SHAPE[:DTYPE]`` and the module's ``SCANPROBE_INPUTS``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from scanprobe.errors import ScanprobeError

_SPEC = re.compile(r"^(?P<name>[^=]+)=(?P<shape>[^:]*)(?::(?P<dtype>\w+))?$")


@dataclass
class InputSpec:
    """``--input x=2000x3x32x32:float32``. On a 0-d input the SHAPE part is its value."""

    name: str
    dims: tuple[int, ...] | None
    scalar: float | None
    dtype: str | None
    text: str


def parse_input_spec(text: str) -> InputSpec:
    m = _SPEC.match(text.strip())
    hint = "write --input NAME=SHAPE[:DTYPE], e.g. --input x=2000x3x32x32:float32, or --input n=1024 for a scalar"
    if not m:
        raise ScanprobeError(f"bad --input {text!r}", hint=hint)
    name, shape, dtype = m.group("name").strip(), m.group("shape").strip(), m.group("dtype")
    if dtype is not None:
        try:
            np.dtype(dtype)
        except TypeError:
            raise ScanprobeError(f"bad dtype {dtype!r} in --input {text!r}", hint=hint) from None
    if shape in ("", "()", "scalar"):
        return InputSpec(name, (), None, dtype, text)
    parts = shape.lower().replace("*", "x").split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        if len(parts) == 1:
            try:
                value = float(parts[0])
            except ValueError:
                value = None
            if value is not None:
                if not math.isfinite(value):
                    raise ScanprobeError(f"--input {text!r}: a scalar input's value must be a finite number",
                                         hint=hint) from None
                return InputSpec(name, None, value, dtype, text)
        raise ScanprobeError(f"bad shape {shape!r} in --input {text!r}", hint=hint) from None
    if any(d < 0 for d in dims):
        raise ScanprobeError(f"negative dimension in --input {text!r}", hint=hint)
    return InputSpec(name, dims, float(dims[0]) if len(dims) == 1 else None, dtype, text)


def knowledge_for(cap, fgraph_inputs, module_inputs: dict, specs: list[InputSpec], used: set) -> dict:
    """What is known of each fgraph input: index -> (value, shape, source)."""
    labels = cap.explicit_labels()
    explicit = cap.explicit_inputs()
    out = {}
    for i, var in enumerate(fgraph_inputs):
        container = getattr(var, "container", None)
        if i >= len(labels):
            if container is not None:
                out[i] = (container.value if hasattr(container, "value") else container.data, None, "shared value")
            continue
        label, user_var = labels[i], explicit[i]
        ndim = getattr(var.type, "ndim", None)
        dtype = str(getattr(var.type, "dtype", ""))
        candidates = {label, f"#{i}"} | ({user_var.name} if getattr(user_var, "name", None) else set())
        given = [k for k in module_inputs if k in candidates]
        used.update(f"SCANPROBE_INPUTS:{k}" for k in given)
        if given:
            value = _as_input(module_inputs[given[0]], dtype, ndim, f"SCANPROBE_INPUTS[{given[0]!r}]", label)
            out[i] = (value, tuple(value.shape), "SCANPROBE_INPUTS")
        own = [k for k in getattr(cap, "given", {}) if k in candidates]
        if own and i not in out:
            value = _as_input(cap.given[own[0]], dtype, ndim, cap.given_source, label)
            out[i] = (value, tuple(value.shape), cap.given_source)
        test_value = getattr(getattr(user_var, "tag", None), "test_value", None)
        if test_value is not None and i not in out:
            value = _as_input(test_value, dtype, ndim, "its test value", label)
            out[i] = (value, tuple(value.shape), "test value")
        for spec in specs:
            if spec.name not in candidates:
                continue
            used.add(spec.text)
            if spec.dtype and spec.dtype != dtype:
                raise ScanprobeError(
                    f"--input {spec.text}: input {label} is {dtype}, not {spec.dtype}",
                    hint=f"drop the dtype or write :{dtype}",
                )
            if ndim == 0:
                value = spec.scalar if spec.scalar is not None else None
                if value is None:
                    raise ScanprobeError(
                        f"--input {spec.text}: input {label} is a scalar; give its value",
                        hint=f"write --input {label}=VALUE, e.g. --input {label}=1024",
                    )
                if np.dtype(dtype).kind in "iu" and not float(value).is_integer():
                    raise ScanprobeError(
                        f"--input {spec.text}: input {label} is {dtype}; {value:g} is not an integer",
                        hint=f"give a whole number, e.g. --input {label}={int(value)}",
                    )
                _fits(np.asarray(value), dtype, f"--input {spec.text}", label,
                      f"give a value in that range, or change the input's dtype in your code")
                out[i] = (np.asarray(value, dtype=dtype), (), "--input")
            else:
                if spec.dims is None or len(spec.dims) != ndim:
                    raise ScanprobeError(
                        f"--input {spec.text}: input {label} has {ndim} dimension{'s' if ndim != 1 else ''}",
                        hint=f"give {ndim} sizes, e.g. --input {label}={'x'.join(['8'] * (ndim or 1))}",
                    )
                out[i] = (None, spec.dims, "--input")
    return out


def _as_input(value, dtype: str, ndim, where: str, label: str):
    """A given value as the input's dtype: cast where numpy casts within the same kind (float64 to
    float32, a Python int to int32), else an error naming the input (a float for an integer)."""
    arr = np.asarray(value)
    if ndim is not None and arr.ndim != ndim:
        raise ScanprobeError(
            f"{where} for input {label} has {arr.ndim} dimension(s), the input {ndim}",
            hint=f"give input {label} an array of {ndim} dimension(s)",
        )
    if dtype and arr.dtype != np.dtype(dtype):
        if not np.can_cast(arr.dtype, np.dtype(dtype), casting="same_kind"):
            raise ScanprobeError(
                f"{where} for input {label} is {arr.dtype}, which does not cast to the input's {dtype}",
                hint=f"give input {label} a {dtype} value (e.g. np.asarray(value, dtype='{dtype}'))",
            )
        _fits(arr, dtype, where, label, f"give input {label} values that fit {dtype}")
        arr = arr.astype(dtype)
    return arr


def _fits(arr, dtype: str, where: str, label: str, hint: str) -> None:
    """An error naming the input and its dtype when a value does not fit it (numpy 1 would wrap
    it silently, numpy 2 raises OverflowError: a size of -727379967 rows, or an internal error)."""
    target = np.dtype(dtype)
    if arr.size == 0 or target.kind not in "iuf" or arr.dtype.kind not in "iuf":
        return
    lo, hi = (np.iinfo(target).min, np.iinfo(target).max) if target.kind in "iu" else (
        -np.finfo(target).max, np.finfo(target).max)
    finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
    if finite.size and (finite.min() < lo or finite.max() > hi):
        bad = finite.max() if finite.max() > hi else finite.min()
        show = (lambda x: f"{int(x):,}") if target.kind in "iu" else (lambda x: f"{x:g}")
        raise ScanprobeError(
            f"{where}: {show(bad) if float(bad).is_integer() else f'{bad:g}'} does not fit input {label}, "
            f"which is {dtype} ({show(lo)} to {show(hi)})",
            hint=hint,
        )
