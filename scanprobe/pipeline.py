"""The library pipeline: load a user module, build its targets, walk them, run the rules.

Every command goes through ``analyse_module`` (``inspect``, ``check``, ``graph``, the HTML report,
and the profiling child, which also needs the live objects to run what was analysed):

    spec ─ resolve backend ─ load (loading.CaptureSession) ─ build each target (Backend.build,
    no linking) ─ walk (walk.walker.analyse: records) ─ verdicts (analysis.history) ─ rules
    ─ results.Report
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scanprobe.analysis.history import classify
from scanprobe.errors import NothingCompiled, ScanprobeError, Timeout
from scanprobe.results import Report
from scanprobe.rules import RULES


def split_target(spec: str) -> tuple[Path, str | None]:
    """'model.py:train_fn' -> (model.py, 'train_fn'); 'model.py' -> (model.py, None)."""
    if ":" in spec:
        head, tail = spec.rsplit(":", 1)
        if head and tail and not tail.startswith(("\\", "/")) and not os.path.exists(spec):
            return Path(head), tail
    return Path(spec), None


def check_file(path: Path, command: str = "inspect") -> None:
    """A user file that can be run: it exists, is a file (not a folder) and is Python."""
    if not path.exists():
        raise ScanprobeError(f"no such file: {path}",
                             hint=f"give the path of a Python file: scanprobe {command} model.py[:TARGET]")
    if path.is_dir():
        raise ScanprobeError(f"{path} is a directory, not a Python file",
                             hint=f"give one Python file: scanprobe {command} {path / 'model.py'}[:TARGET]")
    if path.suffix != ".py":
        raise ScanprobeError(f"{path.name} is not a Python file",
                             hint=f"give a .py file: scanprobe {command} model.py")


@dataclass
class LiveTarget:
    """An analysed target with the live objects behind it (to run it in the same process)."""

    session: Any
    captured: Any
    built: Any
    walked: Any  # walk.walker.Walked

    @property
    def target(self):
        return self.walked.target

    @property
    def backend(self):
        return self.session.backend

    def knowledge(self, specs) -> dict:
        """What is known of this target's graph inputs (module inputs, --input, shared values)."""
        return knowledge_of(self.session, specs)(self.captured, self.built)


@dataclass
class Analysis:
    report: Report
    live: list[LiveTarget] = field(default_factory=list)


def knowledge_of(session, specs):
    """A function (captured call, Built) -> what is known of the built graph's inputs."""
    from scanprobe.inputs import knowledge_for

    module_inputs = session.module_inputs()

    def known(cap, built):
        return knowledge_for(cap, built.fgraph.inputs, module_inputs, specs, set())

    return known


def _select(targets, wanted: str | None, path: Path):
    if wanted is None:
        return targets
    for cap in targets:
        if wanted in cap.names or wanted == cap.label:
            return [cap]
    of_model = [c for c in targets if c.origin == "model" and c.label.startswith(wanted + ".")]
    if of_model:  # a model's name: every function the samplers compile for it
        return of_model
    if wanted.isdigit():
        hits = [c for c in targets if c.site and c.site.line == int(wanted)]
        if hits:
            return hits
    names = ", ".join(c.label for c in targets)
    raise ScanprobeError(
        f"no target {wanted!r} in {path.name}",
        hint=f"targets in {path.name}: {names}" if names else "the module compiled no function",
    )


class deadline:
    """``with deadline(seconds, what):`` raises ``errors.Timeout`` in the main thread after
    ``seconds`` (a user module that loops forever at import); a no-op without a limit or off the
    main thread."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.old = None

    def __enter__(self):
        import signal
        import threading

        if not self.seconds or threading.current_thread() is not threading.main_thread():
            return self

        def ring(signum, frame):
            raise Timeout()

        self.old = signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, float(self.seconds))
        return self

    def __exit__(self, *exc):
        import signal

        if self.old is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)
        return False


class _Steps:
    """Passes progress on, and remembers the last step (to say where a timeout stopped)."""

    def __init__(self, progress):
        self.progress = progress
        self.last = "starting"

    def step(self, text):
        self.last = text
        if self.progress is not None:
            self.progress.step(text)

    def module_starts(self):
        """The user's module is about to run (what --timeout holds; the backend's import is not it)."""
        starts = getattr(self.progress, "module_starts", None)
        if starts is not None:
            starts()


def analyse_module(
    spec: str,
    backend_name: str | None = None,
    mode: str | None = None,
    inputs: tuple[str, ...] = (),
    include_library: bool = False,
    progress=None,
    settings=None,
    pictures: bool = False,
    full_formulas: bool = False,
    timeout: float | None = None,
) -> Analysis:
    """Analyse every target of a user module (``FILE[:TARGET]``); loading, compiling and analysis
    together stop after ``timeout`` seconds with an error that names the step they were in."""
    steps = _Steps(progress)
    try:
        with deadline(timeout):
            return _analyse_module(spec, backend_name, mode, inputs, include_library, steps, settings, pictures,
                                   full_formulas)
    except Timeout:
        raise ScanprobeError(
            f"stopped while {steps.last}: still running after --timeout {timeout:g} s",
            hint="an endless loop or a long computation at import? code under if __name__ == '__main__': does "
            "not run; raise --timeout if the module needs longer",
        ) from None


def _analyse_module(spec, backend_name, mode, inputs, include_library, progress, settings, pictures,
                    full_formulas) -> Analysis:
    from scanprobe.backends import resolve
    from scanprobe.inputs import parse_input_spec
    from scanprobe.loading import CaptureSession
    from scanprobe.model_targets import add_model_targets

    path, wanted = split_target(spec)
    check_file(path)
    specs = [parse_input_spec(s) for s in inputs]
    backend, why = resolve(backend_name, path)
    report = Report(file=str(path), backend=backend.name, backend_why=why)
    step = progress.step if progress else (lambda text: None)
    step(f"importing {backend.name}")
    backend.load(report.notes)
    report.backend_version = backend.version()
    if mode is not None:
        backend.resolve_mode(mode)  # fail fast on a bad --mode, before running user code
    session = CaptureSession(path, backend, mode_override=mode)
    if isinstance(progress, _Steps):
        progress.module_starts()
    step(f"running {path.name}")
    session.run()
    step("compiling the models' sampler functions")
    report.notes.extend(add_model_targets(session, wanted))
    if not session.functions:
        raise NothingCompiled(
            f"{path.name} compiled no function",
            hint=(
                f"scanprobe analyses what the module compiles with {backend.name}.function when imported, "
                "and the sampler functions of PyMC models it binds at top level (FILE:NAME for a function "
                "returning one); code under if __name__ == '__main__': does not run"
            ),
        )
    targets = session.user_targets(include_library)
    if not targets:
        libs = ", ".join(sorted({c.site.short() for c in session.functions if c.site}))
        raise ScanprobeError(
            f"{path.name} compiled functions only inside libraries ({libs})",
            hint="add --include-library to analyse them",
        )
    skipped = session.skipped(include_library)
    if skipped:
        report.skipped = [f"{c.label} ({c.site.short() if c.site else '?'})" for c in skipped]
        report.notes.append(
            f"skipped {len(skipped)} function(s) that libraries compile for themselves: "
            + ", ".join(report.skipped) + " (--include-library analyses them)"
        )
    selected = _select(targets, wanted, path)
    module_inputs = session.module_inputs()
    used: set = set()
    analysis = Analysis(report)
    analyse_targets(analysis, session, selected, specs, settings, progress=step, pictures=pictures,
                    full_formulas=full_formulas, module_inputs=module_inputs, used=used)
    stray = [k for k in module_inputs if f"SCANPROBE_INPUTS:{k}" not in used]
    if stray:
        report.notes.append(
            f"SCANPROBE_INPUTS names {', '.join(map(repr, stray))}, which no analysed target takes as an input; "
            + _inputs_text(analysis)
        )
    unused = [s for s in specs if s.text not in used]
    if unused:
        raise ScanprobeError(f"no input named {unused[0].name!r} in the analysed targets", hint=_inputs_text(analysis))
    report.findings.sort(key=lambda f: (-(f.bytes or 0), f.target, f.message))
    return analysis


def analyse_targets(analysis, session, selected, specs=(), settings=None, *, progress=None, pictures=False,
                    full_formulas=False, module_inputs=None, used=None, built_for=None) -> None:
    """Build, walk, classify and check each captured call in ``selected``; the records, verdicts
    and findings go into ``analysis.report`` (shared by the commands and ``scanprobe.inspect``).
    ``built_for(cap)``: the optimized graph when it is not built from the captured arguments (a
    function compiled before scanprobe saw it)."""
    from scanprobe.inputs import knowledge_for
    from scanprobe.walk.picture import picture
    from scanprobe.walk.walker import analyse

    report, backend = analysis.report, session.backend
    step = progress or (lambda text: None)
    module_inputs = session.module_inputs() if module_inputs is None else module_inputs
    used = set() if used is None else used
    for cap in selected:
        step(f"optimizing {cap.label}")
        built = built_for(cap) if built_for is not None else session.build(cap)
        knowledge = knowledge_for(cap, built.fgraph.inputs, module_inputs, list(specs), used)
        step(f"analysing {cap.label}")
        walked = analyse(backend, built, cap, knowledge, session, full_formulas)
        target = walked.target
        verdicts = classify(target)
        analysis.live.append(LiveTarget(session, cap, built, walked))
        report.targets.append(target)
        report.verdicts[target.name] = verdicts
        for rule in RULES:
            if settings is not None and not settings.wants(rule.code):
                continue
            report.findings.extend(rule.check(target, verdicts, settings))
        if pictures:
            with backend.without_traces():
                report.pictures[target.name] = picture(backend, built, walked, verdicts)


def _inputs_text(analysis) -> str:
    """The explicit inputs of each target and how to name them (unnamed and duplicate ones too)."""
    parts = []
    for live in analysis.live:
        cap = live.captured
        labels = cap.explicit_labels()
        if labels:
            shown = ", ".join(f"{lab} ({_type_text(v)})" for lab, v in zip(labels, cap.explicit_inputs()))
            parts.append(f"{live.target.name} takes {shown}")
    if not parts:
        return "the targets take no explicit inputs"
    return ("; ".join(parts) + ": name an input by its label, or by position ('#0'; "
            "SCANPROBE_INPUTS may also be a list in the order of the inputs)")


def _type_text(var) -> str:
    t = var.type
    ndim, dtype = getattr(t, "ndim", None), getattr(t, "dtype", "?")
    return f"{dtype}, {ndim}-d" if ndim is not None else str(t)


def analyse_function(backend, fn, args=None, path="<function>"):
    """(Target, verdicts) of a function compiled outside scanprobe (the pytest plugin's tests):
    its optimized graph, sized from shared values and the arguments of a call, if any."""
    import numpy as np

    from scanprobe.loading import Captured, CaptureSession
    from scanprobe.walk.walker import analyse

    maker = fn.maker
    explicit = [i.variable for i in maker.inputs if getattr(i, "shared", False) is False
                and not hasattr(i.variable, "container")]
    cap = Captured(0, "user", (explicit,), {}, None, names=[getattr(fn, "name", None) or "compiled function"])
    knowledge = {}
    for i, var in enumerate(maker.fgraph.inputs):
        container = getattr(var, "container", None)
        if i < len(explicit):
            if args is not None and i < len(args):
                value = np.asarray(args[i])
                knowledge[i] = (value, tuple(value.shape), "first call")
        elif container is not None:
            knowledge[i] = (container.value if hasattr(container, "value") else container.data, None, "shared value")
    target = analyse(backend, backend.built_from_function(fn), cap, knowledge, CaptureSession(path, backend)).target
    return target, classify(target)
