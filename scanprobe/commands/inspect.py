"""``scanprobe inspect``: load a module, compile its targets once, report every scan buffer."""

from __future__ import annotations

import os
from pathlib import Path

from scanprobe.errors import NothingCompiled, ScanprobeError


def split_target(spec: str) -> tuple[Path, str | None]:
    """'model.py:train_fn' -> (model.py, 'train_fn'); 'model.py' -> (model.py, None)."""
    if ":" in spec:
        head, tail = spec.rsplit(":", 1)
        if head and tail and not tail.startswith(("\\", "/")) and not os.path.exists(spec):
            return Path(head), tail
    return Path(spec), None


def _select(session, targets, wanted: str | None, path: Path):
    if wanted is None:
        return targets
    for cap in targets:
        if wanted in cap.names or wanted == cap.label:
            return [cap]
    if wanted.isdigit():
        hits = [c for c in targets if c.site and c.site.line == int(wanted)]
        if hits:
            return hits
    names = ", ".join(c.label for c in targets)
    raise ScanprobeError(
        f"no target {wanted!r} in {path.name}",
        hint=f"targets in {path.name}: {names}" if names else "the module compiled no function",
    )


def run_inspect(
    spec: str,
    backend_name: str | None = None,
    mode: str | None = None,
    inputs: tuple[str, ...] = (),
    include_library: bool = False,
    progress=None,
    keep: list | None = None,
    settings=None,
):
    """Analyse every target of a user module; returns a ``report.Report``.

    ``keep``, when given, receives ``(session, captured, built, target)`` for each target (the
    profiler runs what was analysed, in the same process).
    """
    from scanprobe.analysis.history import classify
    from scanprobe.backends import resolve
    from scanprobe.inputs import knowledge_for, parse_input_spec
    from scanprobe.loading import CaptureSession
    from scanprobe.report import Report
    from scanprobe.rules import RULES

    path, wanted = split_target(spec)
    if not path.exists():
        raise ScanprobeError(
            f"no such file: {path}", hint="give the path of a Python file: scanprobe inspect model.py[:TARGET]"
        )
    if path.suffix != ".py" and path.is_file():
        raise ScanprobeError(f"{path.name} is not a Python file", hint="give a .py file: scanprobe inspect model.py")
    specs = [parse_input_spec(s) for s in inputs]
    backend, why = resolve(backend_name, path)
    report = Report(file=str(path), backend=backend.name, backend_version="", backend_why=why)
    step = progress.step if progress else (lambda text: None)
    step(f"importing {backend.name}")
    backend.load(report.notes)
    report.backend_version = backend.version()
    if mode is not None:
        backend.resolve_mode(mode)  # fail fast on a bad --mode, before running user code
    session = CaptureSession(path, backend, mode_override=mode)
    step(f"running {path.name}")
    session.run()
    if not session.functions:
        raise NothingCompiled(
            f"{path.name} compiled no function",
            hint=(
                f"scanprobe analyses what the module compiles with {backend.name}.function when imported; "
                "code under if __name__ == '__main__': does not run"
            ),
        )
    targets = session.user_targets(include_library)
    if not targets:
        libs = ", ".join(sorted({c.site.short() for c in session.functions if c.site}))
        raise ScanprobeError(
            f"{path.name} compiled functions only inside libraries ({libs})",
            hint="add --include-library to analyse them",
        )
    selected = _select(session, targets, wanted, path)
    module_inputs = session.module_inputs()
    used: set = set()
    for cap in selected:
        step(f"optimizing {cap.label}")
        if cap.origin == "library":
            built = backend.built_from_function(cap.function)
        else:
            built = session.build(cap)
        fgraph = built.maker.fgraph
        knowledge = knowledge_for(cap, fgraph.inputs, module_inputs, specs, used)
        step(f"analysing {cap.label}")
        target = backend.analyse(built, cap, knowledge, session)
        verdicts = classify(target)
        if keep is not None:
            keep.append((session, cap, built, target))
        report.targets.append(target)
        report.verdicts[target.name] = verdicts
        for rule in RULES:
            if settings is not None and not settings.wants(rule.code):
                continue
            report.findings.extend(rule.check(target, verdicts, settings))
    stray = [k for k in module_inputs if f"SCANPROBE_INPUTS:{k}" not in used]
    if stray:
        report.notes.append(
            f"SCANPROBE_INPUTS names {', '.join(map(repr, stray))}, which no analysed target takes as an input"
        )
    unused = [s for s in specs if s.text not in used]
    if unused:
        labels = sorted({lab for cap in selected for lab in cap.explicit_labels()})
        raise ScanprobeError(
            f"no input named {unused[0].name!r} in the analysed targets",
            hint=f"inputs: {', '.join(labels)}" if labels else "the targets take no explicit inputs",
        )
    report.findings.sort(key=lambda f: (-(f.bytes or 0), f.target, f.message))
    return report
