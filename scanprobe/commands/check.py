"""``scanprobe check``: rules and budgets over many files, static, for CI."""

from __future__ import annotations

from pathlib import Path

from scanprobe.errors import NothingCompiled, ScanprobeError


def run_check(files, settings, inputs=(), progress=None):
    """Inspect each file with the settings, each in a child process; returns a ``results.CheckResult``."""
    from scanprobe.commands.inspect import run_inspect
    from scanprobe.results import CheckResult, FileError

    result = CheckResult(settings=settings)
    for f in files:
        path = Path(f)
        try:
            if progress:
                progress.step(f"checking {path.name}")
            # each file in its own supervised child: one that fails, hangs or exits fails the check
            rep = run_inspect(str(path), settings.backend, settings.mode, tuple(inputs), progress=progress,
                              settings=settings, timeout=getattr(settings, "timeout", None))
            # check reports and fails on errors and warnings; info notes stay with inspect
            rep.findings = [f for f in rep.findings if f.counts]
            if getattr(settings, "run", False):
                _run(path, settings, inputs, result, rep)
            result.reports.append(rep)
        except NothingCompiled:
            result.skipped.append(str(path))  # a helper module: nothing to check
        except ScanprobeError as err:
            result.errors.append(FileError(str(path), err.message, err.hint))
    return result


def _run(path, settings, inputs, result, rep):
    """With --run: profile the file (in a child) and report measured peaks over --max-peak."""
    from scanprobe.commands.profile import run_profile
    from scanprobe.records import Site, to_plain
    from scanprobe.results import FileError
    from scanprobe.rules import rule
    from scanprobe.rules.sp011_peak_over_budget import PeakOverBudget

    peak_rule = rule(PeakOverBudget)
    if any(f.code == peak_rule.code for f in rep.findings):
        rep.notes.append("not run: its predicted scan buffers are already over --max-peak")
        return
    prof = run_profile(str(path), settings.backend, settings.mode, tuple(inputs), runs=1, node_profile=False)
    if prof.error:
        result.errors.append(FileError(str(path), prof.error.message, prof.error.hint))
        return
    rep.measured = {t.name: to_plain(t.measured) for t in prof.targets}
    for t in prof.targets:
        measured = t.measured.rss_peak_above_precall if t.measured else None
        if settings.max_peak and measured is not None and measured > settings.max_peak:
            site = next((x.site for x in rep.targets if x.name == t.name and x.site), None) or Site(str(path), 1)
            rep.findings.append(peak_rule.measured_finding(t.name, measured, settings.max_peak, site))
