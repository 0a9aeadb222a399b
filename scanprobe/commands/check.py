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
            reports.append(rep)
        except NothingCompiled:
            skipped.append(str(path))  # a helper module: nothing to check
        except ScanprobeError as err:
            errors.append({"file": str(path), "message": err.message, "hint": err.hint})
    return {"reports": reports, "errors": errors, "skipped": skipped}
