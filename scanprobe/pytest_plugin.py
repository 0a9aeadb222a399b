"""pytest plugin: ``@pytest.mark.scan_memory_limit("512 MiB")`` fails a test whose compiled
functions have a scan buffer, or scan buffers together, over the limit.

Registered through the ``pytest11`` entry point. Nothing is imported from a backend until a
marked test runs; then every function the test compiles is recorded (and the shapes of the
arguments of its first call), and analysed statically after the test body.
"""

from __future__ import annotations

import pytest

MARKER = "scan_memory_limit"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{MARKER}(size): fail when a function compiled by the test has a scan buffer, or scan "
        "buffers together, over size (e.g. '512 MiB'); sizes are predicted, nothing extra runs",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    mark = item.get_closest_marker(MARKER)
    if mark is None:
        return (yield)
    from scanprobe.analysis.sizes import human_bytes, parse_bytes
    from scanprobe.backends import backend_in_use
    from scanprobe.pipeline import analyse_function
    from scanprobe.rules import rule
    from scanprobe.rules.sp010_buffer_over_budget import BufferOverBudget
    from scanprobe.rules.sp011_peak_over_budget import PeakOverBudget

    if not mark.args:
        raise pytest.UsageError(f"@pytest.mark.{MARKER} needs a size, e.g. '512 MiB'")
    limit = parse_bytes(str(mark.args[0]))
    backend = backend_in_use()
    if backend is None:
        return (yield)
    with backend.record_compiles() as rec:
        result = yield  # a failing test body raises here, and its failure stands
    settings = type("S", (), {"max_buffer": limit, "max_peak": limit})()
    problems = []
    for fn in rec.compiled:
        target, verdicts = analyse_function(backend, fn, rec.first_args.get(id(fn)), str(item.path))
        for budget in (rule(BufferOverBudget), rule(PeakOverBudget)):
            for f in budget.check(target, verdicts, settings):
                where = f" at {f.site.short()}" if f.site else ""
                problems.append(f"{f.code} {f.message}{where}")
    if problems:
        pytest.fail(
            f"scan memory over the {human_bytes(limit)} limit of @pytest.mark.{MARKER}:\n  " + "\n  ".join(problems),
            pytrace=False,
        )
    return result
