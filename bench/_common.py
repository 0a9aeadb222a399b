"""What every benchmark records beside its figures: backend, versions, command, machine, date."""

import importlib.util
import os
import platform
import time
from importlib.metadata import version


def backend_name() -> str:
    """The backend of this environment (SAMPLE_BACKEND chooses when both are installed)."""
    wanted = os.environ.get("SAMPLE_BACKEND")
    if wanted:
        return wanted
    for name in ("theano", "pytensor"):
        if importlib.util.find_spec(name):
            return name
    raise SystemExit("no backend installed")


def provenance(backend: str, command: str, backend_version: str | None = None) -> dict:
    return {
        "backend": backend,
        "backend_version": backend_version or version(backend),
        "command": command,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
