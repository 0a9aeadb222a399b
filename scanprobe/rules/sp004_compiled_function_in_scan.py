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

CODE = "SP004"
NAME = "compiled-function-in-scan"


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


def clone_snippet(site, arg_names: list[str], backend: str) -> str | None:
    """``clone(<outputs>, replace={<givens with inputs renamed to the call's args>})``."""
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
    clone = "theano.clone" if backend == "theano" else "pytensor.graph.clone_replace"
    if isinstance(givens, ast.Dict):
        pairs = ", ".join(
            f"{ast.unparse(k)}: {ast.unparse(_Rename(renames).visit(v))}" for k, v in zip(givens.keys, givens.values)
        )
        return f"{clone}({out_src}, replace={{{pairs}}})"
    return f"{clone}({out_src}, replace={{{', '.join(f'{i}: {a}' for i, a in renames.items())}}})"
