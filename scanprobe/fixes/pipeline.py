"""The fix pipeline: which fixes apply to a target, the fixed function, and its proof.

One path for ``scanprobe fix`` (run in the supervised child) and ``scanprobe.fix(f)`` (in the
user's process):

1. ``plan``: the fixes that apply, from the target's findings: each finding's rule has its fixer
   (``fixes.registry``), which fixes the scans the findings name, from the walk's records of
   them (a mode fix for SP001: save-mem added where history is removable).
2. ``fixed_build``: the user's call with the rewrites applied, built in the fixed mode, and
   analysed again: a fixed rule whose finding is still there has not been fixed.
3. ``fix_target``: both functions run from the same shared state (``verify``), outputs compared,
   memory and time measured by the runner the caller passes in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from scanprobe.analysis.history import classify
from scanprobe.fixes import savemem
from scanprobe.fixes.graph_edit import Rewrite, Wanted, apply
from scanprobe.fixes.registry import fixers
from scanprobe.fixes.verify import SharedState, compare, outputs
from scanprobe.records import to_plain
from scanprobe.results import FixSide, Measurement, RewriteNote, TargetFix
from scanprobe.rules import RULES, counted
from scanprobe.walk.walker import analyse

#: the budget rules: their findings stay findings on any scan of the fixed graph
BUDGET_RULES = tuple(r.code for r in RULES if r.budget)


def compiled_variables(call):
    """(outputs as given, update pairs) of a captured ``function(...)`` call."""
    args, kwargs = list(call.args), dict(call.kwargs)
    outputs_ = args[1] if len(args) > 1 else kwargs.get("outputs")
    updates = kwargs.get("updates") or []
    pairs = list(updates.items()) if hasattr(updates, "items") else list(updates)
    return outputs_, pairs


def graph_rewrites(backend, call, target, findings, site_of=None, settings=None, pullbacks=None) -> list[Rewrite]:
    """The graph rewrites for the scans ``findings`` name (applied ones have a form): each rule's
    fixer gets its own findings' scans (``Wanted``, with the walk's records of them)."""
    outs, pairs = compiled_variables(call)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    variables = [getattr(o, "variable", o) for o in outs if o is not None] + [u for _, u in pairs]
    variables = [v for v in variables if backend.is_variable(v)]
    found: list[Rewrite] = []
    for fixer in fixers():
        if fixer.is_mode_fix:
            continue
        wanted = Wanted(target, [f for f in findings if f.code == fixer.code], site_of, settings, pullbacks)
        if not wanted:
            continue
        taken = {id(r.scan_node) for r in found if r.form}
        found += [r for r in fixer.rewrites(backend, variables, wanted) if id(r.scan_node) not in taken]
    return found


def rewritten(backend, call, applied):
    """A copy of a captured call whose outputs and updates carry the applied rewrites."""
    outs, pairs = compiled_variables(call)
    single = not isinstance(outs, (list, tuple))
    listed = [outs] if single else list(outs)
    plain = [o for o in listed if backend.is_variable(o)]
    new = apply(backend.api, plain + [u for _, u in pairs], applied)
    it = iter(new[: len(plain)])
    new_outs = [next(it) if backend.is_variable(o) else o for o in listed]
    new_updates = [(k, u) for (k, _), u in zip(pairs, new[len(plain):])]
    args, kwargs = list(call.args), dict(call.kwargs)
    value = new_outs[0] if single else (type(outs)(new_outs) if isinstance(outs, tuple) else new_outs)
    if len(args) > 1:
        args[1] = value
    else:
        kwargs["outputs"] = value
    if pairs:
        kwargs["updates"] = new_updates
    return dataclasses.replace(call, args=tuple(args), kwargs=kwargs, function=None, built=None)


@dataclass
class Plan:
    """The fixes that apply to one target."""

    save_mem: bool
    rewrites: list[Rewrite] = field(default_factory=list)
    #: a budget's findings (SP010 under ``fix --max-buffer``) are among the target's: the fixed
    #: graph must meet the budget, whichever fixes got it there
    budget_rules: list[str] = field(default_factory=list)

    @property
    def applied(self) -> list[Rewrite]:
        return [r for r in self.rewrites if r.form]

    @property
    def needs_save_mem(self) -> bool:
        """SP001's fix, or a rewrite that leaves history read only at its last rows (a fixer
        module with ``NEEDS_SAVE_MEM``: SP006's, SP007's)."""
        needs = {f.code for f in fixers() if getattr(f.module, "NEEDS_SAVE_MEM", False)}
        return self.save_mem or any(r.rule in needs for r in self.applied)

    @property
    def rules(self) -> list[str]:
        return ([savemem.RULE] if self.save_mem else []) + sorted({r.rule for r in self.applied} | set(self.budget_rules))

    def notes(self) -> list[RewriteNote]:
        return [RewriteNote(r.rule, r.scan, r.form, list(r.detail), r.reason, r.snippet) for r in self.rewrites]


def plan(backend, call, target, findings, site_of=None, settings=None, pullbacks=None) -> Plan:
    """What to do for one analysed target (``records.Target``): ``findings`` are its findings (all
    rules, budget findings included when ``settings`` has a budget); ``site_of(scan node)`` the
    user's line of a scan (``session.user_site_from_trace``); ``pullbacks`` the scans' gradients
    recorded while the module ran (``session.pullbacks``)."""
    budget = sorted({f.code for f in findings if f.code in BUDGET_RULES and f.counts})
    return Plan(save_mem=savemem.applies(findings),
                rewrites=graph_rewrites(backend, call, target, findings, site_of, settings, pullbacks),
                budget_rules=budget)


def findings_of(target, settings=None) -> list:
    """Every rule's findings for an analysed target (budgets from ``settings``, if any)."""
    verdicts = classify(target)
    return [f for r in RULES for f in r.check(target, verdicts, settings)]


def fixed_mode(backend, mode, fix_plan: Plan):
    """The mode a fixed function is built in: save-mem added where the plan needs it, and the mode
    change of every graph fixer with an applied rewrite that has one (SP008's)."""
    if fix_plan.needs_save_mem:
        mode = savemem.fixed_mode(backend, mode)
    for fixer in fixers():
        if not fixer.is_mode_fix and hasattr(fixer.module, "fixed_mode") and any(
                r.rule == fixer.code for r in fix_plan.applied):
            mode = fixer.module.fixed_mode(backend, mode)
    return mode


def fixed_build(backend, session, call, built, fix_plan: Plan, knowledge_of, mode_override=None):
    """(fixed call, its Built, its analysed Target) for a target and its plan.

    ``knowledge_of(call, built)`` gives what is known of the fixed graph's inputs.
    """
    fixed_call = rewritten(backend, call, fix_plan.applied) if fix_plan.applied else call
    mode = built.mode if mode_override is None else backend.resolve_mode(mode_override)[0]
    mode = fixed_mode(backend, mode, fix_plan)
    fixed = backend.build(fixed_call, mode)
    fixed.mode_label = built.mode_label + (f" + {backend.save_mem_tag}" if fix_plan.needs_save_mem else "")
    target = analyse(backend, fixed, fixed_call, knowledge_of(fixed_call, fixed), session).target
    return fixed_call, fixed, target


def remaining(target, rules, settings=None, scans=None) -> dict:
    """Counted findings of ``rules`` still present in an analysed target: on the scans named in
    ``scans`` (the original's; None: every scan), budget findings (SP010) on any scan. The loops a
    fix builds (a checkpointed loop's segments) are new scans: their findings are not the fixed
    ones, and the budget bounds them."""
    found = counted(findings_of(target, settings))

    def left(f):
        return f.code in BUDGET_RULES or scans is None or f.scan in scans

    return {r: sum(1 for f in found if f.code == r and left(f)) for r in rules}


def fix_target(backend, session, live, fix_plan: Plan, values, runner, knowledge_of, mode_override=None,
               on_update=None, settings=None) -> TargetFix:
    """Apply the fixes of ``fix_plan`` (see ``plan``) to one analysed target, prove them by rerunning.

    ``live``: the target's (captured call, Built, Target); ``values``: its explicit inputs;
    ``runner``: an object with ``step(text)``, ``timed()`` (a context around calls of the user's
    function) and ``measure(fn, values) -> Measurement`` (the child's).
    """
    call, built, target = live
    entry = TargetFix(
        name=target.name,
        rules=fix_plan.rules,
        mode=target.mode.name,
        tag=target.mode.save_mem_tag if fix_plan.save_mem else "",
        suggestion=savemem.suggestion(backend, target.mode.name) if fix_plan.save_mem else "",
        fixed_mode=mode_override or "",
        rewrites=fix_plan.notes(),
        site=to_plain(call.site) if call.site else None,
    )
    save = on_update or (lambda e: None)
    save(entry)  # a run stopped from here on still reports the target, "not compared"
    state = SharedState(built.fgraph)
    runner.step(f"running {target.name} as it is")
    entry.before = FixSide(predicted_peak=target.scan_buffer_bytes())
    before_out, entry.before.measured = _run_from(state, session.realize(call), values, runner)
    save(entry)
    runner.step(f"rewriting {target.name}")
    _, fixed, fixed_target = fixed_build(backend, session, call, built, fix_plan, knowledge_of, mode_override)
    entry.after = FixSide(predicted_peak=fixed_target.scan_buffer_bytes(),
                          remaining=remaining(fixed_target, fix_plan.rules, settings, {s.name for s in target.scans}),
                          over_budget=[f.message for f in counted(findings_of(fixed_target, settings))
                                       if f.code in BUDGET_RULES] if settings is not None else [])
    save(entry)
    runner.step(f"running {target.name} fixed")
    after_out, entry.after.measured = _run_from(state, backend.realize(fixed), values, runner)
    cmp = compare(before_out, after_out)
    entry.outputs_equal, entry.max_abs_diff, entry.tolerance = cmp["outputs_equal"], cmp["max_abs_diff"], cmp["tolerance"]
    save(entry)
    return entry


def _run_from(state, fn, values, runner) -> tuple[list, Measurement]:
    """Outputs of one call and the measurements of ``fn``, each starting from the saved state."""
    state.restore()
    with runner.timed():
        out = outputs(fn, values)
    state.restore()
    measured = runner.measure(fn, values)
    state.restore()
    return out, measured


# ============================================================================ scanprobe.fix(f)


def call_from_function(backend, fn, captured_cls):
    """A captured call (``captured_cls``: loading.Captured) that recompiles a compiled function.

    Theano keeps the unoptimized graph of a compiled function in ``fn.maker``; PyTensor optimizes
    the graph it was given in place and keeps only that: a copy of it is compiled (shared
    variables' copies share their storage, so updates still reach the user's), and the note says
    how to get the graph fixes.
    """
    maker = fn.maker
    inputs = [i.variable for i in maker.inputs if not getattr(i, "implicit", False)]
    updates = [(i.variable, i.update) for i in maker.inputs if i.update is not None]
    outs = [o.variable for o in maker.outputs]
    kwargs = {"mode": maker.mode, "on_unused_input": "ignore"}
    notes = []
    if backend.compiled_graph_is_optimized:
        fg = maker.fgraph
        fg2 = fg.clone()
        inputs = [v for v, i in zip(fg2.inputs, maker.inputs) if not getattr(i, "implicit", False)]
        updates = [(fg2.inputs[k], fg2.outputs[o]) for o, k in sorted(fg.update_mapping.items())]
        outs = list(fg2.outputs[: len(outs)])  # (DeepCopyOp outputs: the original's copies)
        kwargs["accept_inplace"] = True
        notes.append(
            f"{backend.name} keeps only the optimized graph of a compiled function, where your scans may no "
            "longer be recognisable: for all graph fixes (SP002, SP003) pass function's arguments: "
            "scanprobe.fix(inputs, outputs, mode=...)"
        )
    outputs_ = outs[0] if getattr(fn, "unpack_single", False) and len(outs) == 1 else outs
    if getattr(fn, "return_none", False):
        outputs_ = []
    if updates:
        kwargs["updates"] = updates
    return captured_cls(0, "user", (inputs, outputs_), kwargs, None, names=["function"]), notes


def fix_function(backend, session, call, built, settings=None, pullbacks=None, example=()):
    """(fixed function, plan, notes) for the API: ``call`` analysed in ``built`` (its optimized
    graph), every fix that applies, compiled in the call's own mode (plus save-mem for SP001);
    ``settings`` a budget (``max_buffer``), ``pullbacks`` the scans' recorded gradients,
    ``example`` values of the explicit inputs (the sizes a budget is checked at)."""
    import numpy as np

    knowledge = {i: (v.container.value, None, "shared value") for i, v in enumerate(built.fgraph.inputs)
                 if getattr(v, "container", None) is not None}
    for i, value in enumerate(example):
        value = np.asarray(value)
        knowledge[i] = (value, tuple(value.shape), "example")
    target = analyse(backend, built, call, knowledge, session).target
    fix_plan = plan(backend, call, target, findings_of(target, settings), site_of(session), settings, pullbacks)
    fixed_call = rewritten(backend, call, fix_plan.applied) if fix_plan.applied else call
    kwargs = dict(fixed_call.kwargs)
    mode = built.mode
    notes = []
    mode = fixed_mode(backend, mode, fix_plan)
    if fix_plan.needs_save_mem:
        notes.append(f"{savemem.RULE}: added {backend.save_mem_tag} (and the rewrites it needs beside it) to the mode")
    kwargs["mode"] = mode
    return backend.compile(*fixed_call.args, **kwargs), fix_plan, notes


def site_of(session):
    """The user's line of a scan node of their graph (where its outputs were made)."""
    return lambda node: next((s for s in (session.user_site_from_trace(o) for o in node.outputs) if s), None)
