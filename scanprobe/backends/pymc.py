"""PyMC adapter: the functions PyMC's samplers compile for a user's model (the only module that
imports pymc; used by the PyTensor adapter).

A user's module that builds a ``pm.Model`` and compiles nothing still has targets: what
``pm.sample`` would compile for it. Each is made here by calling PyMC's own entry point while
scanprobe's capture hooks are installed, so the captured call holds exactly PyMC's inputs,
outputs, givens and mode (its rewrites included), and nothing is linked or run:

- ``logp_dlogp``: ``model.logp_dlogp_function(ravel_inputs=True)``, the joint log-density and its
  gradient that NUTS evaluates, a function of the raveled continuous value variables;
- ``logp``: ``model.compile_logp()``, the log-density alone, a function of every value variable;
- ``forward``, where the model has observed variables: what ``pm.sample_posterior_predictive``
  compiles (``compile_forward_sampling_function``), draws of the observed variables given the
  free ones (their untransformed values at the initial point).

The inputs' values come from ``model.initial_point()`` (what the samplers start from), which
PyMC computes by compiling and running its own small initial-point function.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class ModelFunction:
    """One function PyMC compiles for a model: ``compile()`` makes the compile call (under
    scanprobe's hooks) and returns the values of its explicit inputs at the initial point, by
    input name (``"#0"``: by position, for the raveled vector that has no name)."""

    what: str  # logp_dlogp | logp | forward
    describe: str
    compile: Callable[[], dict]


def loaded() -> bool:
    """PyMC is used only when the user's module imported it (scanprobe never imports it first)."""
    return "pymc" in sys.modules


def is_model(obj) -> bool:
    if not loaded():
        return False
    model_cls = getattr(sys.modules["pymc"], "Model", None)
    return model_cls is not None and isinstance(obj, model_cls)


def models_in(namespace: dict) -> list[tuple[str, Any]]:
    """Module-level names bound to PyMC models (each model once, under its first name)."""
    out, seen = [], set()
    for name, obj in namespace.items():
        if name.startswith("_") or not is_model(obj) or id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append((name, obj))
    return out


def model_functions(model) -> tuple[list[ModelFunction], dict]:
    """What the samplers compile for ``model``, each with the values of its inputs; and the
    initial point by variable name: value variables (transformed, as the log-density takes them)
    and the untransformed random variables (as forward graphs take them)."""
    import pymc as pm

    point, values = _initial_values(model)
    out = []
    grad_vars = list(model.continuous_value_vars)
    if grad_vars:
        def logp_dlogp():
            model.logp_dlogp_function(ravel_inputs=True, initial_point=point)
            raveled = pm.blocking.DictToArrayBijection.map({v.name: point[v.name] for v in grad_vars})
            return {"#0": raveled.data}

        names = ", ".join(v.name for v in grad_vars)
        out.append(ModelFunction("logp_dlogp", f"log-density and gradient (NUTS) of {names}", logp_dlogp))

    def logp():
        model.compile_logp()
        return {v.name: point[v.name] for v in model.value_vars}

    out.append(ModelFunction("logp", "log-density", logp))

    observed = list(model.observed_RVs)
    if observed:
        free = [rv for rv in model.free_RVs if rv.name in values]

        def forward():
            from pymc.sampling.forward import compile_forward_sampling_function

            extra = {"model": model} if "model" in inspect.signature(compile_forward_sampling_function).parameters else {}
            compile_forward_sampling_function(outputs=observed, vars_in_trace=free, basic_rvs=model.basic_RVs, **extra)
            return {rv.name: values[rv.name] for rv in free}

        names = ", ".join(rv.name for rv in observed)
        out.append(ModelFunction("forward", f"posterior-predictive draws of {names} given the free variables "
                                 "(sample_posterior_predictive)", forward))
    return out, {**values, **point}


def _initial_values(model) -> tuple[dict, dict]:
    """(the initial point of the value variables, the untransformed variables' values there).

    Both from PyMC's own small functions, compiled and run before any scanprobe hook is installed."""
    point = model.initial_point()
    outs = list(model.unobserved_value_vars)
    run = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")
    return point, dict(zip([o.name for o in outs], run(point)))
