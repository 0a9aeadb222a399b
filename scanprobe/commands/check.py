"""``scanprobe check``: rules and budgets over many files, static, for CI."""

from __future__ import annotations

from pathlib import Path

from scanprobe.errors import NothingCompiled, ScanprobeError


def run_check(files, settings, inputs=(), progress=None) -> dict:
    """Inspect each file with the settings; returns {"reports": [...], "errors": [...]}."""
    from scanprobe.commands.inspect import run_inspect

    reports, errors, skipped = [], [], []
    loaded_backend = None
    for f in files:
        path = Path(f)
        try:
            if progress:
                progress.step(f"checking {path.name}")
            from scanprobe.backends import resolve

            backend, _ = resolve(settings.backend, path) if path.exists() else (None, "")
            if backend is not None:
                if loaded_backend and backend.name != loaded_backend:
                    raise ScanprobeError(
                        f"{path.name} needs {backend.name}, and this run already loaded {loaded_backend}",
                        hint="run scanprobe check once per backend (--backend), each in its own environment",
                    )
                loaded_backend = backend.name
            rep = run_inspect(str(path), settings.backend, settings.mode, tuple(inputs), settings=settings)
            # check reports and fails on errors and warnings; info notes stay with inspect
            rep.findings = [f for f in rep.findings if f.severity in ("error", "warning")]
            if getattr(settings, "run", False):
                if any(f.code == "SP011" for f in rep.findings):
                    rep.notes.append("not run: its predicted scan buffers are already over --max-peak")
                else:
                    rep.findings.extend(_measured_findings(path, settings, inputs, errors, rep))
            reports.append(rep)
        except NothingCompiled:
            skipped.append(str(path))  # a helper module: nothing to check
        except ScanprobeError as err:
            errors.append({"file": str(path), "message": err.message, "hint": err.hint})
    return {"reports": reports, "errors": errors, "skipped": skipped}


def _measured_findings(path, settings, inputs, errors, rep):
    """With --run: profile the file (in a child) and report measured peaks over --max-peak."""
    from scanprobe.analysis.sizes import human_bytes
    from scanprobe.commands.profile import run_profile
    from scanprobe.records import Site
    from scanprobe.rules.base import Finding

    prof = run_profile(str(path), settings.backend, settings.mode, tuple(inputs), runs=1, node_profile=False)
    if prof["error"]:
        errors.append({"file": str(path), "message": prof["error"]["message"], "hint": prof["error"].get("hint")})
        return []
    out = []
    rep.measured = {t["name"]: t.get("measured") for t in prof["targets"]}
    for t in prof["targets"]:
        measured = (t.get("measured") or {}).get("rss_peak_above_precall")
        if settings.max_peak and measured is not None and measured > settings.max_peak:
            out.append(Finding(
                code="SP011", name="peak-over-budget", target=t["name"],
                message=f"a measured call added {human_bytes(measured)} (RSS), over the "
                        f"{human_bytes(settings.max_peak)} budget",
                site=Site(str(path), 1), bytes=measured,
            ))
    return out
