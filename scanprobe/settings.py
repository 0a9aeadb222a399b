"""Settings of ``scanprobe check``: options over ``[tool.scanprobe]`` in pyproject.toml."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from scanprobe.errors import ScanprobeError

KEYS = ("max-buffer", "max-peak", "select", "ignore", "exit-zero", "mode", "backend")


@dataclass
class Settings:
    max_buffer: int | None = None
    max_peak: int | None = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exit_zero: bool = False
    mode: str | None = None
    backend: str | None = None
    #: check --run: also profile each file in a child process (measured peaks against max-peak)
    run: bool = False
    #: seconds for loading, compiling and analysing each file (--timeout)
    timeout: float | None = None
    source: str = "defaults"

    def wants(self, code: str) -> bool:
        """Whether a rule code is enabled (select is a prefix list; ignore wins)."""
        code = code.upper()
        if any(code.startswith(p.upper()) for p in self.ignore):
            return False
        return not self.select or any(code.startswith(p.upper()) for p in self.select)


def find_pyproject(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(start: Path) -> Settings:
    """``[tool.scanprobe]`` of the nearest pyproject.toml at or above ``start``."""
    import tomllib

    from scanprobe.analysis.sizes import parse_bytes

    path = find_pyproject(start)
    if path is None:
        return Settings()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ScanprobeError(f"{path}: invalid TOML: {exc}", hint="fix pyproject.toml") from None
    table = data.get("tool", {}).get("scanprobe")
    if table is None:
        return Settings()
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ScanprobeError(
            f"{path}: unknown key(s) in [tool.scanprobe]: {', '.join(unknown)}",
            hint=f"known keys: {', '.join(KEYS)}",
        )
    s = Settings(source=str(path))
    try:
        if "max-buffer" in table:
            s.max_buffer = parse_bytes(str(table["max-buffer"]))
        if "max-peak" in table:
            s.max_peak = parse_bytes(str(table["max-peak"]))
    except ValueError:
        raise ScanprobeError(f"{path}: a size in [tool.scanprobe] is not a size", hint='write e.g. "512MiB" or "8GB"') from None
    s.select = list(table.get("select", []))
    s.ignore = list(table.get("ignore", []))
    s.exit_zero = bool(table.get("exit-zero", False))
    s.mode = table.get("mode")
    s.backend = table.get("backend")
    return s
