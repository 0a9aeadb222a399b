"""PyMC adapter: the functions PyMC's samplers compile for a user's model (the only module that
imports pymc; used by the PyTensor adapter).

A user's module that builds a ``pm.Model`` and compiles nothing still has targets: what
``pm.sample`` would compile for it. Each is made here by calling PyMC's own entry point while
scanprobe's capture hooks are installed, so the captured call holds exactly PyMC's inputs,
outputs, givens and mode (its rewrites included), and nothing is linked or run:

- ``logp_dlogp``: ``model.logp_dlogp_function(ravel_inputs=True)``, the joint log-density and its
  gradient that NUTS evaluates, a function of the raveled continuous value variables;
- ``logp``: ``model.compile_logp()``, the log-density alone, a function of every value variable.

The inputs' values come from ``model.initial_point()`` (what the samplers start from), which
PyMC computes by compiling and running its own small initial-point function.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class ModelFunction:
    """One function PyMC compiles for a model: ``compile()`` makes the compile call (under
    scanprobe's hooks) and returns the values of its explicit inputs at the initial point, by
    input name (``"#0"``: by position, for the raveled vector that has no name)."""

    what: str  # logp_dlogp | logp
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


def model_functions(model) -> list[ModelFunction]:
    """What the samplers compile for ``model``, each with the values of its inputs."""
    import pymc as pm  # noqa: PLC0415 - loaded by the user's module already (see ``loaded``)

    point = model.initial_point()
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
    return out


def version() -> str:
    return str(getattr(sys.modules.get("pymc"), "__version__", "?"))
