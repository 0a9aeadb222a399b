"""Targets from PyMC models: the functions a sampler compiles for each model a module binds.

The module itself compiles nothing: for each ``pm.Model`` bound at top level (or returned by the
function named in ``FILE:NAME``) the backend's PyMC adapter (backends/pymc.py) compiles what the
samplers would, under the capture hooks of the loading session, so each becomes a target named
``NAME.logp_dlogp``, ``NAME.logp`` or ``NAME.forward``, sited at the line that binds the model and
sized at the model's initial point.
"""

from __future__ import annotations

import sys

from scanprobe.bindings import binding_site
from scanprobe.errors import ScanprobeError, Timeout
from scanprobe.loading import _user_error, user_output_to_stderr


def add_model_targets(session, wanted: str | None = None) -> list[str]:
    """The functions a sampler would compile for each model the module binds at top level
    (or for the model a function named ``wanted`` returns): targets ``NAME.logp_dlogp`` and
    ``NAME.logp``, sited at the line that binds the model. Returns one line per model."""
    if session.module is None:
        return []
    found = session.backend.models_in(session.module.__dict__)
    func = session.module.__dict__.get(wanted) if wanted else None
    if wanted and callable(func) and not session.backend.is_variable(func) \
            and not any(c.label == wanted or wanted in c.names for c in session.functions):
        try:
            made = func()
        except Exception as exc:  # noqa: BLE001 - the user's function failed
            raise _user_error(session, exc, f"{wanted}() raised") from None
        if session.backend.is_model(made):
            found = [(wanted, made)]
    lines = []
    # functions the module itself had PyMC compile (``model.compile_logp()``) take the value
    # variables: sized at the initial point too
    theirs = [c for c in session.functions if c.origin in ("user", "framework") and not c.given]
    for name, model in found:
        site = binding_site(session.path, name)
        try:
            with user_output_to_stderr():
                functions, point = session.backend.model_functions(model)  # the initial point, no hook
                for cap in theirs:
                    labels = {getattr(v, "name", None) for v in cap.explicit_inputs()} - {None}
                    if labels and labels <= set(point) and not cap.given:
                        cap.given, cap.given_source = point, f"initial point of {name}"
                session.backend.install_hooks(session)
                for fn in functions:
                    start = len(session.functions)
                    session._compiling_for = (f"{name}.{fn.what}", site)
                    try:
                        given = fn.compile()
                    finally:
                        session._compiling_for = None
                    for cap in session.functions[start:]:
                        cap.given, cap.given_source = given, "initial point"
                    lines.append(f"{name}.{fn.what}: {fn.describe}, as the samplers compile it, "
                                 "with inputs at the model's initial point")
        except (KeyboardInterrupt, Timeout, ScanprobeError):
            raise
        except Exception as exc:  # noqa: BLE001 - PyMC failed on the user's model
            raise _user_error(session, exc, f"compiling the model {name} raised") from None
        finally:
            session.backend.remove_hooks()
    return lines
