"""The messages between scanprobe and the child that runs the user's code, typed.

The parent writes a ``ChildSpec`` (what to run), the child rewrites a ``ChildResult`` after every
step (what happened so far), and the supervisor adds an ``Exit`` (how the child ended). Each
crosses the process boundary as JSON written by ``records.to_plain`` and read back by
``results.from_plain``, the same pair the reports use; nothing on either side reads a plain dict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum

from scanprobe.records import to_plain
from scanprobe.results import NotApplied, Report, RunError, TargetFix, TargetProfile, from_plain
from scanprobe.settings import Settings


class Action(StrEnum):
    INSPECT = "inspect"  # inspect, check and graph: load, compile, analyse; nothing run
    PROFILE = "profile"
    FIX = "fix"


class KilledFor(StrEnum):
    """Why the supervisor stopped the child."""

    MEMORY = "memory"
    LOAD_MEMORY = "load_memory"
    TIMEOUT = "timeout"
    LOAD_TIMEOUT = "load_timeout"


@dataclass
class ChildSpec:
    """What the child runs: one module's targets, analysed, profiled or fixed."""

    spec: str  # FILE[:TARGET]
    action: str = Action.PROFILE
    backend: str | None = None
    mode: str | None = None
    inputs: list[str] = field(default_factory=list)
    runs: int = 3
    device: str = "cpu"
    memory_limit: int | None = None
    node_profile: bool = True
    #: fix --device cuda: the linker the fixed function is compiled for (the original runs as it is)
    fixed_mode: str | None = None
    #: fix --max-buffer: the budget for any one scan buffer (SP010's findings, fixed by checkpoints)
    max_buffer: int | None = None
    #: inspect, check, graph: what the analysis reports (check's rules and budgets, pictures of
    #: the graph, libraries' functions, whole formulas)
    settings: Settings | None = None
    include_library: bool = False
    pictures: bool = False
    full_formulas: bool = False
    #: set by the supervisor: where the child writes its ``ChildResult`` and, once at the end, the
    #: whole ``Report`` (``write_report``); --timeout
    result: str = ""
    report: str = ""
    timeout: float | None = None

    def write(self, path: str) -> None:
        with open(path, "w") as fh:
            json.dump(to_plain(self, internal=True), fh)

    @classmethod
    def read(cls, path: str) -> "ChildSpec":
        with open(path) as fh:
            return from_plain(cls, json.load(fh))


@dataclass
class Exit:
    """How the child ended (the supervisor's view)."""

    code: int | None = None
    signal: int | None = None
    killed_for: str | None = None  # a KilledFor, or None
    peak_rss: int = 0
    rss_baseline: int | None = None
    load_timeout: float = 600.0
    seconds: float = 0.0


@dataclass
class ChildResult:
    """What the child has done so far; rewritten after every step, so a crash, a kill for memory
    or a timeout leaves what was measured and the step that was running."""

    step: str = "starting"
    #: the analysis of the module (the inspect report's JSON form)
    report: dict | None = None
    profiles: list[TargetProfile] = field(default_factory=list)
    fixes: list[TargetFix] = field(default_factory=list)
    not_applied: list[NotApplied] = field(default_factory=list)
    error: RunError | None = None
    #: the class of scanprobe's error (``errors.NothingCompiled``: a skip for check)
    error_type: str = ""
    #: the supervisor's clock: when the user's calls started (None between calls), their total
    running_since: float | None = None
    ran_s: float = 0.0
    #: calls that ended past --timeout between two polls of the supervisor
    overran_s: float | None = None
    #: RSS just before the target is called: --memory-limit counts from here
    rss_baseline: int | None = None
    #: when the user's module started running: --timeout holds loading from here (the backend's
    #: own import before it has IMPORT_BUDGET_S, however busy the machine)
    module_since: float | None = None
    #: the module is loaded and analysed: from here each step outside the calls has the loading
    #: budget of its own (compiling one target's original or fixed function), not all of them
    loaded: bool = False
    #: set by the supervisor: how the child ended, what it printed (the end of it), and the
    #: analysis it sent (``Action.INSPECT``)
    exit: Exit | None = None
    log_tail: str = ""
    output: str = ""
    analysis: Report | None = None

    def write(self, path: str) -> None:
        """Written whole or not at all (a temporary file renamed over the last one): the
        supervisor reads it every 20 ms and after a kill, and a half-written file read as empty
        once lost every finished target's results and read as 'starting' with no calls counted."""
        import os

        tmp = f"{path}.part"
        with open(tmp, "w") as fh:
            json.dump(to_plain(self, internal=True), fh, default=str)
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: str, previous: "ChildResult | None" = None) -> "ChildResult":
        """The result file as it is now (``previous``, else an empty result, while it is missing
        or cannot be read)."""
        try:
            with open(path) as fh:
                return from_plain(cls, json.load(fh))
        except (OSError, ValueError):
            return previous if previous is not None else cls()


def write_report(report: Report, path: str) -> None:
    """The child's whole analysis (every field, internal ones too), written once when it is done:
    written to a temporary name and renamed, so the parent reads all of it or nothing."""
    import os

    tmp = f"{path}.part"
    with open(tmp, "w") as fh:
        json.dump(to_plain(report, internal=True), fh, default=str)
    os.replace(tmp, path)


def read_report(path: str) -> Report | None:
    """The child's analysis, or None when it never finished writing one."""
    try:
        with open(path) as fh:
            return from_plain(Report, json.load(fh))
    except (OSError, ValueError):
        return None
