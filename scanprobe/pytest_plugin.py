"""pytest plugin: ``@pytest.mark.scan_memory_limit("512 MiB")`` fails a test whose compiled
functions have a scan buffer, or scan buffers together, over the limit.

Registered through the ``pytest11`` entry point. Nothing is imported from a backend until a
marked test runs; then every function the test compiles is recorded (and the shapes of the
arguments of its first call), and analysed statically after the test body.
"""

from __future__ import annotations

import sys

import pytest

MARKER = "scan_memory_limit"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{MARKER}(size): fail when a function compiled by the test has a scan buffer, or scan "
        "buffers together, over size (e.g. '512 MiB'); sizes are predicted, nothing extra runs",
    )


class _Recorder:
    """Records the makers created and the first-call arguments of functions during one test."""

    def __init__(self, backend):
        self.backend = backend
        self.makers = []
        self.first_args = {}
        self._undo = []

    def __enter__(self):
        api = self.backend.api
        maker_cls = api.FunctionMaker
        original_create = maker_cls.__dict__["create"]
        recorder = self

        def create(maker, *a, **kw):
            fn = original_create(maker, *a, **kw)
            recorder.makers.append((maker, fn))
            fn_cls = type(fn)
            if not getattr(fn_cls, "_scanprobe_wrapped", False):
                original_call = fn_cls.__call__

                def call(this, *args, **kwargs):
                    recorder.first_args.setdefault(id(this), args)
                    return original_call(this, *args, **kwargs)

                fn_cls.__call__ = call
                fn_cls._scanprobe_wrapped = True
                recorder._undo.append(lambda: (setattr(fn_cls, "__call__", original_call),
                                               setattr(fn_cls, "_scanprobe_wrapped", False)))
            return fn

        maker_cls.create = create
        self._undo.append(lambda: setattr(maker_cls, "create", original_create))
        return self

    def __exit__(self, *exc):
        while self._undo:
            self._undo.pop()()


def _backend_in_use():
    from scanprobe.backends import get_backend

    for name in ("theano", "pytensor"):
        if name in sys.modules:
            b = get_backend(name)
            b.load([])
            return b
    return None


def _analyse(backend, maker, fn, args, test_path):
    import numpy as np

    from scanprobe.analysis.history import classify
    from scanprobe.loading import Captured, CaptureSession

    session = CaptureSession(test_path, backend)
    explicit = [i.variable for i in maker.inputs if getattr(i, "shared", False) is False and not hasattr(i.variable, "container")]
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
    built = backend.built_from_function(fn)
    target = backend.analyse(built, cap, knowledge, session)
    return target, classify(target)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    mark = item.get_closest_marker(MARKER)
    if mark is None:
        return (yield)
    from scanprobe.analysis.sizes import human_bytes, parse_bytes
    from scanprobe.rules.sp010_buffer_over_budget import BufferOverBudget
    from scanprobe.rules.sp011_peak_over_budget import PeakOverBudget

    if not mark.args:
        raise pytest.UsageError(f"@pytest.mark.{MARKER} needs a size, e.g. '512 MiB'")
    limit = parse_bytes(str(mark.args[0]))
    backend = _backend_in_use()
    if backend is None:
        return (yield)
    with _Recorder(backend) as rec:
        result = yield  # a failing test body raises here, and its failure stands
    settings = type("S", (), {"max_buffer": limit, "max_peak": limit})()
    problems = []
    for maker, fn in rec.makers:
        target, verdicts = _analyse(backend, maker, fn, rec.first_args.get(id(fn)), str(item.path))
        for rule in (BufferOverBudget(), PeakOverBudget()):
            for f in rule.check(target, verdicts, settings):
                where = f" at {f.site.short()}" if f.site else ""
                problems.append(f"{f.code} {f.message}{where}")
    if problems:
        pytest.fail(
            f"scan memory over the {human_bytes(limit)} limit of @pytest.mark.{MARKER}:\n  " + "\n  ".join(problems),
            pytrace=False,
        )
    return result
