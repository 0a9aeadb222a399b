"""Typed results of every command, each with its versioned JSON contract.

``Report`` (inspect, and one per file in check), ``ProfileResult``, ``FixResult`` and
``CheckResult`` are plain dataclasses: commands return them, reporters read them, and
``to_json()`` is the only place their machine-readable form is made (docs/json-schema.md,
docs/schemas/*.json; tests/test_contracts.py validates every command's output against them).
Summaries are computed here, once, and every reporter reads them.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from dataclasses import dataclass, field
from typing import Any

from scanprobe.analysis.history import BufferVerdict
from scanprobe.contracts import FIX_SCHEMA, PROFILE_SCHEMA, REPORT_SCHEMA, __version__
from scanprobe.records import INTERNAL, GraphPicture, Target, to_plain
from scanprobe.rules import by_code, counted
from scanprobe.rules.base import Finding


def from_plain(cls, data):
    """A dataclass (nested ones too) from its plain form, as written by ``to_plain``."""
    if data is None or not dataclasses.is_dataclass(cls):
        return data
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        kwargs[f.name] = _coerce(hints.get(f.name), data[f.name])
    return cls(**kwargs)


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    """A dataclass's resolved field types (resolving them is most of ``from_plain``'s cost, and
    the supervisor reads the child's result every 20 ms)."""
    return typing.get_type_hints(cls)


def _coerce(hint, value):
    if value is None or hint is None:
        return value
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", typing.Union)):
        inner = [a for a in args if a is not type(None)]
        return _coerce(inner[0], value) if len(inner) == 1 else value
    if origin is list and args:
        return [_coerce(args[0], v) for v in value]
    if origin is tuple:
        return tuple(value)
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {k: _coerce(args[1], v) for k, v in value.items()}
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        return from_plain(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    return value


# ============================================================================ inspect


@dataclass
class Summary:
    """What a command's result comes to, one type for every command: the exit code and the
    counts that command reports (the others stay None and are left out of its JSON).

    inspect/check per file: targets, findings (errors and warnings), notes (info), the bytes
    held in removable history; profile: findings, notes, prediction gaps, refused and failed
    targets; fix: fixed, failed and unfixed; check: findings, files, errors.
    """

    exit_code: int
    targets: int | None = None
    findings: int | None = None
    notes: int | None = None
    removable_bytes: int | None = None
    #: removable history whose size is symbolic (said in the text, not in the JSON contract)
    removable_symbolic: int | None = field(default=None, metadata=INTERNAL)
    gaps: int | None = None
    refused: list[str] | None = None
    fixed: list[str] | None = None
    failed: list[str] | None = None
    unfixed: list[str] | None = None
    files: int | None = None
    errors: int | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in to_plain(self).items() if v is not None}


@dataclass
class Report:
    """One analysed module: its targets (records), buffer verdicts and findings."""

    file: str
    backend: str
    backend_version: str = ""
    backend_why: str = ""
    notes: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    #: per target name: its buffers' verdicts
    verdicts: dict[str, list[BufferVerdict]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: per target name: the optimized graph as records (only when a picture was asked for)
    pictures: dict[str, GraphPicture] = field(default_factory=dict)
    #: check --run: per target name, what a measured call used
    measured: dict | None = None

    def verdict_map(self, target_name: str) -> dict:
        """(scan id, role, index) -> BufferVerdict for one target."""
        return {(v.buffer.scan_id, v.buffer.role, v.buffer.index): v for v in self.verdicts.get(target_name, [])}

    @property
    def summary(self) -> Summary:
        kept = counted(self.findings)
        removable, symbolic = 0, 0
        for f in self.findings:
            rule = by_code(f.code)
            if rule is not None and rule.holds_removable_history(f):
                if f.bytes is None:
                    symbolic += 1
                else:
                    removable += f.bytes
        return Summary(
            targets=len(self.targets),
            findings=len(kept),
            notes=len(self.findings) - len(kept),
            removable_bytes=removable,
            removable_symbolic=symbolic,
            exit_code=1 if kept else 0,
        )

    @property
    def exit_code(self) -> int:
        return self.summary.exit_code

    def to_json(self) -> dict:
        targets = []
        for t in self.targets:
            td = to_plain(t)
            verdicts = self.verdict_map(t.name)
            for sd, scan in zip(td["scans"], t.scans):
                for bd, buf in zip(sd["buffers"], scan.buffers):
                    v = verdicts.get((buf.scan_id, buf.role, buf.index))
                    bd["bytes"] = buf.bytes
                    bd["shape"] = list(buf.shape) if buf.shape is not None else None
                    bd["bytes_formula"] = buf.bytes_formula()
                    bd["status"] = v.status if v else "unknown"
                    bd["verdict"] = v.verdict if v else ""
                    bd["why"] = list(v.why) if v else []
            targets.append(td)
        return {
            "schema": REPORT_SCHEMA,
            "scanprobe": __version__,
            "file": self.file,
            "backend": {"name": self.backend, "version": self.backend_version, "why": self.backend_why},
            "notes": list(self.notes),
            "targets": targets,
            "findings": [to_plain(f) for f in self.findings],
            "summary": self.summary.to_json(),
        }


def error_json(error) -> dict:
    """The JSON envelope of an error (exit code 2), the same for every command."""
    return {
        "schema": REPORT_SCHEMA,
        "scanprobe": __version__,
        "error": {
            "message": error.message,
            "hint": error.hint,
            "frames": [to_plain(f) for f in error.frames],
            "exit_code": error.exit_code,
        },
    }


# ============================================================================ running


@dataclass
class Measurement:
    """One target's calls, measured in the child (after a warm-up call)."""

    first_call_s: float = 0.0
    rss_before_call: int = 0
    rss_peak_above_precall: int = 0
    rss_samples: int = 0
    maxrss_growth: int = 0
    tracemalloc_peak: int = 0
    runs: int = 0
    wall_median_s: float = 0.0
    wall_min_s: float = 0.0
    #: the process's CPU time of the same calls (every thread's): what a verdict on time compares,
    #: since a busy machine preempts a call for tens of milliseconds of wall time, not of CPU time
    cpu_median_s: float = 0.0
    cpu_min_s: float = 0.0


@dataclass
class RunError:
    """Why a run did not complete: refused, memory, timeout, error, crash."""

    message: str
    hint: str = ""
    kind: str = "error"
    frames: list = field(default_factory=list)
    traceback: str = ""
    log_tail: str = ""

    def to_json(self) -> dict:
        out = {"message": self.message, "hint": self.hint, "kind": self.kind}
        for key in ("frames", "traceback", "log_tail"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


# ============================================================================ profile

#: A measured buffer further than this from its prediction is itself reported.
GAP_TOLERANCE = 0.05


@dataclass
class BufferProfile:
    scan: str
    scan_id: int
    role: str
    index: int
    belongs_to: str
    predicted_bytes: int | None = None
    predicted_shape: list | None = None
    measured_bytes: int | None = None
    measured_shape: list | None = None

    @property
    def gap(self) -> float | None:
        p, m = self.predicted_bytes, self.measured_bytes
        if p is None or m is None:
            return None
        return (m - p) / p if p else (0.0 if m == 0 else 1.0)


@dataclass
class NodeProfile:
    op: str
    seconds: float
    output_bytes: int


@dataclass
class ScanTime:
    scan: str
    seconds: float
    n_steps: int | None = None


@dataclass
class TwinProfile:
    """Per-buffer and per-node figures of a profiled twin of the function."""

    mode: str
    buffers: list[BufferProfile] = field(default_factory=list)
    nodes: list[NodeProfile] = field(default_factory=list)
    scans: list[ScanTime] = field(default_factory=list)
    target: dict = field(default_factory=dict)  # the twin's analysed Target (plain)


@dataclass
class TargetProfile:
    name: str
    predicted_peak: int = 0
    predicted_parts: list[str] = field(default_factory=list)
    available: int | None = None
    memory_limit: int | None = None
    refused: bool = False
    link_seconds: float | None = None
    measured: Measurement | None = None
    device_memory: dict | None = None
    profile: TwinProfile | None = None
    #: why this target's run did not complete (the others still ran)
    error: RunError | None = None

    @property
    def gaps(self) -> list[str]:
        out = []
        for b in self.profile.buffers if self.profile else []:
            if b.gap is not None and abs(b.gap) > GAP_TOLERANCE:
                out.append(f"{b.belongs_to} of `{b.scan}`: predicted {b.predicted_bytes} B, measured {b.measured_bytes} B")
        return out

    def to_json(self) -> dict:
        out = {
            "name": self.name, "predicted_peak": self.predicted_peak, "predicted_parts": list(self.predicted_parts),
            "available": self.available, "memory_limit": self.memory_limit, "refused": self.refused,
            "gaps": self.gaps,
        }
        if self.link_seconds is not None:
            out["link_seconds"] = self.link_seconds
        if self.measured is not None:
            out["measured"] = to_plain(self.measured)
        if self.device_memory is not None:
            out["device_memory"] = self.device_memory
        if self.error is not None:
            out["error"] = self.error.to_json()
        if self.profile is not None:
            p = to_plain(self.profile)
            for bd, b in zip(p["buffers"], self.profile.buffers):
                bd["gap"] = b.gap
            out["profile"] = p
        return out


@dataclass
class ProfileResult:
    file: str
    device: str = "cpu"
    inspect: dict | None = None  # the child's inspect report (JSON form)
    targets: list[TargetProfile] = field(default_factory=list)
    exit: dict | None = None  # how the child ended: code, signal, killed_for, peak_rss, seconds
    error: RunError | None = None

    @property
    def summary(self) -> Summary:
        findings = (self.inspect or {}).get("summary", {}).get("findings", 0)
        gaps = sum(len(t.gaps) for t in self.targets)
        return Summary(
            findings=findings,
            notes=(self.inspect or {}).get("summary", {}).get("notes", 0),
            gaps=gaps,
            refused=[t.name for t in self.targets if t.refused],
            failed=[t.name for t in self.targets if t.error is not None],
            exit_code=2 if self.error else (1 if findings or gaps else 0),
        )

    def to_json(self) -> dict:
        return {
            "schema": PROFILE_SCHEMA,
            "scanprobe": __version__,
            "file": self.file,
            "device": self.device,
            "inspect": self.inspect,
            "targets": [t.to_json() for t in self.targets],
            "exit": self.exit,
            "error": self.error.to_json() if self.error else None,
            "summary": self.summary.to_json(),
        }


# ============================================================================ fix


@dataclass
class FixSide:
    """One side of a fix (before or after): the predicted peak and what a measured call used."""

    predicted_peak: int | None = None
    measured: Measurement | None = None
    #: after only: findings of the fixed rules still present in the fixed graph's analysis
    remaining: dict = field(default_factory=dict)
    #: after only, under a budget (fix --max-buffer): the buffers of the fixed graph still over it
    over_budget: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        out = {"predicted_peak": self.predicted_peak, "measured": to_plain(self.measured)}
        if self.remaining or self.predicted_peak is not None:
            out["remaining"] = dict(self.remaining)
        if self.over_budget:
            out["over_budget"] = list(self.over_budget)
        return out


@dataclass
class RewriteNote:
    """A graph rewrite that was found for a scan: applied (``form``) or why not (``reason``)."""

    rule: str
    scan: str
    form: str = ""
    detail: list[str] = field(default_factory=list)
    reason: str = ""
    snippet: str = ""


@dataclass
class TargetFix:
    """Every fix applied to one target, and how it was proven."""

    name: str
    rules: list[str] = field(default_factory=list)
    mode: str = ""
    tag: str = ""  # the save-mem tag, when SP001 is among the rules
    suggestion: str = ""  # the mode to write (SP001)
    fixed_mode: str = ""  # --device cuda: the linker the fixed function ran on
    rewrites: list[RewriteNote] = field(default_factory=list)
    before: FixSide = field(default_factory=FixSide)
    after: FixSide = field(default_factory=FixSide)
    outputs_equal: bool | None = None  # None: not compared (the run did not finish)
    max_abs_diff: float | None = None
    tolerance: dict | None = None
    site: dict | None = None

    @property
    def status(self) -> str:
        """verified: equal outputs, every fixed finding gone from the fixed graph, and memory or
        time moved as the fixed rules predict; failed: any of those not so (``why_failed``);
        not compared: the run ended before both sides ran."""
        if self.outputs_equal is None:
            return "not compared"
        return "failed" if self.why_failed else "verified"

    @property
    def why_failed(self) -> str:
        if self.outputs_equal is False:
            return "the outputs changed"
        left = [r for r in self.rules if self.after.remaining.get(r)]
        if left:
            return f"the fixed graph still has {', '.join(left)}"
        b, a = self.before, self.after
        for code in self.rules:
            rule = by_code(code)
            moves = rule.fix_moves if rule is not None else ""
            if moves == "memory":
                if b.predicted_peak is not None and a.predicted_peak is not None and a.predicted_peak >= b.predicted_peak \
                        and b.predicted_peak > 0:
                    return f"{code}: the predicted peak did not go down"
                if b.measured and a.measured and a.measured.tracemalloc_peak > 1.05 * b.measured.tracemalloc_peak + 65536:
                    return f"{code}: the measured call's memory went up"
            elif moves == "time" and b.measured and a.measured and _slower_run(b.measured, a.measured):
                return f"{code}: the fixed call is slower"
        return ""

    @property
    def warnings(self) -> list[str]:
        """What a verified fix costs that the user should weigh: a call more than 10% slower
        (both medians above the timing's noise floor: ``analysis.measured``)."""
        from scanprobe.analysis.measured import slower

        b, a = self.before.measured, self.after.measured
        if b is None or a is None:
            return []
        ratio = slower(b.wall_median_s, a.wall_median_s)
        if ratio is None:
            return []
        if b.cpu_median_s and a.cpu_median_s and slower(b.cpu_median_s, a.cpu_median_s) is None:
            return []  # slower on the clock, not in CPU time: the machine was busy, not the call
        return [f"the fixed call is slower: {_ms(a.wall_median_s)} against {_ms(b.wall_median_s)} before "
                f"(median of {a.runs} calls, {ratio:.2f}x the time); the memory it saves costs that time"]

    def to_json(self) -> dict:
        return {
            "warnings": self.warnings,
            "name": self.name, "rule": self.rules[0] if self.rules else "", "rules": list(self.rules),
            "mode": self.mode, "tag": self.tag, "suggestion": self.suggestion, "fixed_mode": self.fixed_mode,
            "rewrites": [to_plain(r) for r in self.rewrites],
            "before": self.before.to_json(),
            "after": dict(self.after.to_json(), remaining_sp001=self.after.remaining.get(_save_mem_rule(), 0)),
            "outputs_equal": self.outputs_equal, "max_abs_diff": self.max_abs_diff, "tolerance": self.tolerance,
            "site": self.site, "status": self.status, "why_failed": self.why_failed,
        }


def _slower_run(b: Measurement, a: Measurement) -> bool:
    """Whether the fixed call's fastest run is slower than the original's: over 1.25x and 10 ms
    more, on the clock and, where the child measured it, in CPU time too.

    The clock alone is not a verdict: on a busy machine one run of a 0.1 ms call measured 28-32 ms
    of wall time waiting for a core and 0.2 ms of CPU time (docs/next.md). CPU time alone is not
    one either: a fix that batches the work into one multi-threaded BLAS call spends more CPU time
    in less wall time. Slower is slower on both clocks."""

    def over(before: float, after: float) -> bool:
        return after > 1.25 * before + 0.010

    if not over(b.wall_min_s or b.wall_median_s, a.wall_min_s or a.wall_median_s):
        return False
    before_cpu, after_cpu = b.cpu_min_s or b.cpu_median_s, a.cpu_min_s or a.cpu_median_s
    return over(before_cpu, after_cpu) if before_cpu and after_cpu else True


def _ms(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.1f} ms"


def _save_mem_rule() -> str:
    """The rule whose remaining count the fix contract has always carried as ``remaining_sp001``."""
    from scanprobe.rules import rule
    from scanprobe.rules.sp001_full_history_buffer import FullHistoryBuffer

    return rule(FullHistoryBuffer).code


@dataclass
class NotApplied:
    name: str
    rewrites: list[RewriteNote] = field(default_factory=list)


@dataclass
class FixResult:
    file: str
    backend: str
    device: str = "cpu"
    inspect: dict | None = None
    fixes: list[TargetFix] = field(default_factory=list)
    not_applied: list[NotApplied] = field(default_factory=list)
    error: RunError | None = None

    @property
    def summary(self) -> Summary:
        fixed = [f.name for f in self.fixes if f.status == "verified"]
        failed = [f.name for f in self.fixes if f.status != "verified"]
        done = {(f.name, r) for f in self.fixes if f.status == "verified" for r in f.rules}
        unfixed = sorted({
            f"{x['target']}: {x['code']}"
            for x in (self.inspect or {}).get("findings", [])
            if x.get("severity", "error") in ("error", "warning") and (x["target"], x["code"]) not in done
        })
        return Summary(fixed=fixed, failed=failed, unfixed=unfixed,
                       exit_code=2 if self.error else (1 if failed or unfixed else 0))

    def to_json(self) -> dict:
        return {
            "schema": FIX_SCHEMA,
            "scanprobe": __version__,
            "file": self.file,
            "backend": self.backend,
            "device": self.device,
            "inspect": self.inspect,
            "fixes": [f.to_json() for f in self.fixes],
            "not_applied": [to_plain(n) for n in self.not_applied],
            "error": self.error.to_json() if self.error else None,
            "summary": self.summary.to_json(),
        }


# ============================================================================ check


@dataclass
class FileError:
    file: str
    message: str
    hint: str | None = None


@dataclass
class CheckResult:
    reports: list[Report] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    settings: Any = None

    def rows(self):
        """(report, finding) for every counted finding, in report order."""
        for rep in self.reports:
            for f in counted(rep.findings):
                yield rep, f

    @property
    def summary(self) -> Summary:
        n = sum(1 for _ in self.rows())
        exit_zero = bool(getattr(self.settings, "exit_zero", False))
        return Summary(
            findings=n,
            files=len({r.file for r in self.reports} | {e.file for e in self.errors}),
            errors=len(self.errors),
            exit_code=2 if self.errors else (0 if exit_zero or not n else 1),
        )

    def to_json(self) -> dict:
        s = self.settings
        return {
            "schema": REPORT_SCHEMA,
            "scanprobe": __version__,
            "reports": [dict(r.to_json(), measured=r.measured) for r in self.reports],
            "errors": [to_plain(e) for e in self.errors],
            "skipped": list(self.skipped),
            "settings": {"max_buffer": s.max_buffer, "max_peak": s.max_peak, "select": s.select,
                         "ignore": s.ignore, "source": s.source} if s is not None else {},
            "summary": self.summary.to_json(),
        }
