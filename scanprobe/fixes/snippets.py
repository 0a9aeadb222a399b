"""Fix snippets in the user's own code: the lines of their file rewritten, their names kept.

SP006's accumulate fix, for the common form (a fold by ``sum``/``mean`` over the history of one
state of a scan whose ``outputs_info`` is a plain list), becomes::

    def step_acc(x_t, h_prev, acc):           # `step`, plus the running sum as one more state
        h = step(x_t, h_prev)
        return h, acc + h
    (hs, accs), _ = th.scan(step_acc, sequences=[x], outputs_info=[h0, T.zeros_like(h0)])
    pooled = accs[-1] / hs.shape[0]           # was: hs.mean(axis=0)

from the user's ``def step(x_t, h_prev)``, their scan call and their reduction's line. Anything
else (taps given as dicts, several folds, folds through an expression, a max, a dot over time)
returns "" and the fixer keeps its general template. Text only: the user's file is parsed, never
run or changed.
"""

from __future__ import annotations

import ast

from scanprobe.walk.expressions import _parsed

#: tensor functions a module calls through its tensor alias (``T.tanh``): finds that alias
_TENSOR_FUNCS = frozenset({"zeros", "zeros_like", "ones", "dot", "tanh", "sum", "mean", "exp", "log", "sqrt",
                           "matrix", "vector", "tensor3", "maximum", "concatenate", "switch", "nnet", "sigmoid"})


def _call_on_line(tree, line, name_end="scan"):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node, "lineno", None) == line:
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if fname == name_end:
                return node
    return None


def _statement_on_line(tree, line):
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno <= line <= (node.end_lineno or node.lineno):
            return node
    return None


def _function(tree, name):
    hits = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    return hits[0] if len(hits) == 1 else None


def _tensor_alias(tree) -> str:
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _TENSOR_FUNCS and isinstance(node.value, ast.Name):
            counts[node.value.id] = counts.get(node.value.id, 0) + 1
    return max(counts, key=counts.get) if counts else "pt"


def accumulate_snippet(scan_site, step_name: str, fold: str, fold_site, fold_expr: str,
                       role: str, index: int) -> str:
    """The user's scan call and reduction rewritten with the running value carried in the step
    (see the module docstring), or "" when the form is not the common one.

    ``fold`` is ``"sum"`` or ``"mean"`` (the user's call, from ``fold_expr``); ``role``/``index``
    which output's history it folds (``sit_sot`` 0: the first state; other roles get "")."""
    if fold not in ("sum", "mean") or not fold_expr or scan_site is None or fold_site is None:
        return ""
    if scan_site.file != fold_site.file or role != "sit_sot":
        return ""  # a per-step output's shape is written nowhere to start its running sum from
    parsed = _parsed(scan_site.file)
    if parsed is None:
        return ""
    source, tree = parsed
    call = _call_on_line(tree, scan_site.line)
    assign = _statement_on_line(tree, scan_site.line)
    fold_stmt = _statement_on_line(tree, fold_site.line)
    step = _function(tree, step_name) if step_name else None
    if call is None or assign is None or fold_stmt is None or step is None or len(assign.targets) != 1:
        return ""
    if not call.args or not isinstance(call.args[0], ast.Name) or call.args[0].id != step_name:
        return ""
    kw = {k.arg: k.value for k in call.keywords}
    outputs_info = kw.get("outputs_info")
    if not isinstance(outputs_info, ast.List) or not outputs_info.elts:
        return ""
    entries = outputs_info.elts
    if any(isinstance(e, ast.Dict) or (isinstance(e, ast.Call) and getattr(e.func, "id", "") == "dict")
           for e in entries):
        return ""  # taps: the general template
    is_none = [isinstance(e, ast.Constant) and e.value is None for e in entries]
    slots = [k for k, none in enumerate(is_none) if not none]
    if index >= len(slots):
        return ""
    position = slots[index]
    seqs = kw.get("sequences")
    n_seqs = len(seqs.elts) if isinstance(seqs, ast.List) else (1 if seqs is not None else 0)
    n_states = sum(1 for none in is_none if not none)
    params = [a.arg for a in step.args.args]
    if step.args.vararg is not None or len(params) < n_seqs + n_states:
        return ""
    # the user's names for what scan returns
    target = assign.targets[0]
    value = assign.value
    if isinstance(target, ast.Name) and isinstance(value, ast.Subscript) and value.value is call \
            and isinstance(value.slice, ast.Constant) and value.slice.value == 0 and len(entries) == 1:
        outs = [target.id]
    elif isinstance(target, ast.Tuple) and value is call and len(target.elts) == 2:
        first = target.elts[0]
        if isinstance(first, ast.Name) and len(entries) == 1:
            outs = [first.id]
        elif isinstance(first, ast.Tuple) and all(isinstance(e, ast.Name) for e in first.elts) \
                and len(first.elts) == len(entries):
            outs = [e.id for e in first.elts]
        else:
            return ""
    else:
        return ""
    history = outs[position]
    over = _fold_axes(fold_expr, history)
    if over is None:
        return ""  # the reduction is not `history.sum/mean(...)` over the steps or everything
    T = _tensor_alias(tree)
    own = params[: n_seqs + n_states]
    rest = params[n_seqs + n_states:]
    acc = "acc" if "acc" not in params else "acc_"
    accs = "accs" if "accs" not in outs else "accs_"
    init = ast.get_source_segment(source, entries[position])
    new_params = ", ".join(own + [acc] + rest)
    call_args = ", ".join(params)
    lines = [f"def step_acc({new_params}):  # `{step_name}`, plus the running sum as one more state"]
    if len(entries) == 1:
        lines += [f"    h = {step_name}({call_args})", f"    return h, {acc} + h"]
    else:
        lines += [f"    outs = {step_name}({call_args})", f"    return (*outs, {acc} + outs[{position}])"]
    # the scan call, the step and outputs_info changed, the rest as the user wrote it
    text = ast.get_source_segment(source, call)
    if text is None or init is None:
        return ""
    zero = f"{T}.zeros_like({init})"
    new_info = "[" + ", ".join([ast.get_source_segment(source, e) for e in entries] + [zero]) + "]"
    new_call = text.replace(ast.get_source_segment(source, outputs_info), new_info, 1)
    new_call = new_call.replace(step_name, "step_acc", 1)
    new_call = " ".join(new_call.split())
    lhs = f"({', '.join(outs + [accs])}), _"
    lines.append(f"{lhs} = {new_call}")
    last = f"{accs}[-1]" if over == "steps" else f"{accs}[-1].{fold}()"
    total = last if fold == "sum" else f"{last} / {history}.shape[0]"
    stmt = ast.get_source_segment(source, fold_stmt) or ""
    if fold_expr not in stmt:
        return ""
    new_stmt = " ".join(stmt.split("#")[0].replace(fold_expr, total, 1).split())
    lines.append(f"{new_stmt}  # was: {fold_expr}")
    return "\n".join(lines)


def _fold_axes(expr: str, history: str):
    """"steps" when ``expr`` sums or averages ``history`` over its first axis (``hs.mean(axis=0)``,
    ``T.sum(hs, 0)``), "all" over every axis (``hs.sum()``), else None."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    if node.func.attr not in ("sum", "mean"):
        return None
    args = list(node.args)
    if isinstance(node.func.value, ast.Name) and node.func.value.id == history:
        pass  # hs.sum(...)
    elif args and isinstance(args[0], ast.Name) and args[0].id == history:
        args = args[1:]  # T.sum(hs, ...)
    else:
        return None
    axis = next((k.value for k in node.keywords if k.arg == "axis"), args[0] if args else None)
    if any(k.arg not in ("axis",) for k in node.keywords) or len(args) > 1:
        return None
    if axis is None:
        return "all"
    if isinstance(axis, ast.Constant) and axis.value == 0:
        return "steps"
    return None
