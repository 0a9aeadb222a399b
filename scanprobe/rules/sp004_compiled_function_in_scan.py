"""SP004 compiled-function-in-scan: a compiled function is called on graph variables.

## What it does
While your module runs, catches a function compiled with `theano.function` / `pytensor.function`
being called on symbolic variables (typically inside a scan step), before the backend's
`TypeError: ... Expected an array-like object, but found a Variable`, and names the function, the
variable, the step and the lines involved. The fix is written with your own expressions, taken
from the compile call's source.

## Why is this bad?
A compiled function computes numbers from numbers; a scan step builds a graph from graph
variables. Calling one inside the other cannot work, and the backend's message does not say why.

## Example
```python
test_fn = theano.function([index], cost, givens={x: data[index:index + 1]})
def step(i):
    return test_fn(i)          # TypeError
outs, _ = theano.scan(step, sequences=[T.arange(2)])
```

## Use instead
```python
def step(i):
    return theano.clone(cost, replace={x: data[i:i + 1]})
```
or wrap the graph once in `OpFromGraph([x], [cost])` and call that op in the step (pass shared
variables as explicit inputs: PyTensor 3.3 needs them).

## Fix safety
The clone computes the same graph per step; scanprobe shows it, and does not edit your file.
"""

from __future__ import annotations

import ast

from scanprobe.errors import UserCodeError
from scanprobe.rules.base import Rule


def _call_at(path: str, line: int):
    """The ast.Call of ``function(...)`` that starts on ``line`` (multi-line calls included)."""
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        tree = ast.parse(source)
    except (OSError, SyntaxError):
        return None, ""
    best = None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
            and ast.unparse(node.func).split(".")[-1] == "function"
        ):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best, source


class _Rename(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(id=self.names[node.id], ctx=node.ctx), node)
        return node


def clone_snippet(site, arg_names: list[str], clone: str) -> str | None:
    """``clone(<outputs>, replace={<givens with inputs renamed to the call's args>})``; ``clone``
    is the backend's clone function as the user writes it (``theano.clone``)."""
    call, _ = _call_at(site.file, site.line)
    if call is None:
        return None
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    inputs = kw.get("inputs", call.args[0] if call.args else None)
    outputs = kw.get("outputs", call.args[1] if len(call.args) > 1 else None)
    if outputs is None:
        return None
    input_names = [e.id for e in getattr(inputs, "elts", []) if isinstance(e, ast.Name)]
    renames = {n: a for n, a in zip(input_names, arg_names) if a}
    out_src = ast.unparse(_Rename(renames).visit(outputs))
    givens = kw.get("givens")
    if isinstance(givens, ast.Dict):
        pairs = ", ".join(
            f"{ast.unparse(k)}: {ast.unparse(_Rename(renames).visit(v))}" for k, v in zip(givens.keys, givens.values)
        )
        return f"{clone}({out_src}, replace={{{pairs}}})"
    return f"{clone}({out_src}, replace={{{', '.join(f'{i}: {a}' for i, a in renames.items())}}})"


class CompiledFunctionInScan(Rule):
    # Found while the module runs (the call raises there), so ``check`` on a target finds
    # nothing: ``explain`` turns what loading saw into the error the user gets.
    code = "SP004"
    name = "compiled-function-in-scan"
    summary = "a compiled function is called on graph variables (inside a scan step)"
    doc = __doc__

    def check(self, target, verdicts, settings=None):
        return []  # load-time rule: see explain()

    def explain(self, function_name, compiled_at, caller, arg_names, symbolic, clone_code, frames) -> UserCodeError:
        """The error for a compiled function called on the symbolic ``symbolic`` variables.

        ``compiled_at``: the site of its compile call; ``caller``: the innermost user frame that
        called it; ``arg_names``: the source text of the call's arguments; ``clone_code``: the
        backend's clone function as the user writes it.
        """
        var = arg_names[0] if arg_names else (getattr(symbolic[0], "name", None) or "a graph variable")
        where = f" in `{caller.function}` ({caller.short()})" if caller else ""
        compiled = f" (compiled at {compiled_at.short()})" if compiled_at else ""
        snippet = clone_snippet(compiled_at, arg_names, clone_code) if compiled_at else None
        hint = (
            f"build the graph instead of calling it: return {snippet}" if snippet
            else "build the graph with clone(outputs, replace={input: variable}) or OpFromGraph instead of calling it"
        ) + "; or wrap it once in OpFromGraph and call that op (pass shared variables as explicit inputs)"
        return UserCodeError(
            f"{self.code} {self.name}: `{function_name}`{compiled} is called on the symbolic `{var}`{where}; "
            "a compiled function takes numbers, a scan step builds a graph",
            hint=hint,
            frames=frames,
        )
