"""The op vocabulary: what kind of op a node holds, for every Theano-family backend.

This is the one module that knows ops by their class names (Theano, PyTensor 2.x/3.x and Aesara
name the same ops alike, with a few aliases listed here). walk/, rules/ and fixes/ ask it
questions (``is_pass_through(op)``, ``dot_operands(op)``, ``scalar(op) is Scalar.ADD``) and never
compare a class name with a string: tests/test_architecture.py fails on a string constant that
names an op class, or on ``__name__``, anywhere else in walk/, fixes/, rules/ and analysis/. A
backend release that renames or fuses an op is one edit here.

Nothing here imports a backend: ops are recognised by their class (and base classes') names, so
the same answers hold for whichever library is loaded.
"""

from __future__ import annotations

import ast
from enum import Enum


def _class(op) -> str:
    return type(op).__name__


def _mro(op) -> set[str]:
    return {c.__name__ for c in type(op).__mro__}


class Scalar(str, Enum):
    """What an elementwise op (or a scalar op node) computes per element. Values are the
    canonical scalar op names, used as structural keys and in text."""

    ADD = "Add"
    SUB = "Sub"
    NEG = "Neg"
    MUL = "Mul"
    MAX = "Maximum"
    MIN = "Minimum"
    LT = "LT"
    GT = "GT"
    LE = "LE"
    GE = "GE"
    EQ = "EQ"
    NEQ = "NEQ"
    SWITCH = "Switch"
    INT_DIV = "IntDiv"
    TRUE_DIV = "TrueDiv"
    MOD = "Mod"
    AND = "AND"
    OR = "OR"
    INVERT = "Invert"
    CEIL = "Ceil"
    FLOOR = "Floor"
    ABS = "Abs"
    CAST = "Cast"
    IDENTITY = "Identity"
    SECOND = "Second"
    COMPOSITE = "Composite"
    SQR = "Sqr"
    POW = "Pow"
    OTHER = "?"


#: scalar op classes that one backend names differently (Aesara's ScalarMaximum; casts by dtype)
_SCALAR_ALIASES = {"ScalarMaximum": "Maximum", "ScalarMinimum": "Minimum"}
_SCALARS = {s.value: s for s in Scalar}

#: folds a reduction (CAReduce) can be, by its scalar op: (name in text, running-value form)
FOLDS = {Scalar.ADD: "sum", Scalar.MUL: "product", Scalar.MAX: "max", Scalar.MIN: "min",
         Scalar.AND: "all", Scalar.OR: "any"}

#: views that hand their input on unchanged (values and rows)
_PASS_THROUGH = frozenset({"Rebroadcast", "Unbroadcast", "SpecifyShape", "OutputGuard", "DeepCopyOp", "ViewOp"})
_DOTS = frozenset({"Dot", "Dot22", "Dot22Scalar", "_dot"})
#: dot products with their (left, right) operand positions: BLAS forms put the operands after the
#: output and scale inputs (gemv(y, a, A, x, b), gemm(Z, a, X, Y, b))
_DOT_OPERANDS = {"Dot": (0, 1), "Dot22": (0, 1), "_dot": (0, 1), "Dot22Scalar": (0, 1),
                 "Gemv": (2, 3), "CGemv": (2, 3), "Gemm": (2, 3), "CGemm": (2, 3)}
_SCALAR_TENSOR = frozenset({"ScalarFromTensor", "TensorFromScalar"})
#: ops whose output shape is given by some of their inputs: (class, index of the first such input)
_SHAPE_FROM_INPUTS = {"ARange": 0, "Alloc": 1, "AllocEmpty": 0, "Reshape": 1}
#: ops that may be run to size a buffer (shape arithmetic on scalars and shape vectors, and
#: reductions of known vectors); scalar-level ops count too (``is_scalar_op``)
_SHAPE_ARITHMETIC = frozenset({
    "Shape", "Shape_i", "MakeVector", "Elemwise", "ScalarFromTensor", "TensorFromScalar",
    "Subtensor", "DimShuffle", "Join", "Assert", "CheckAndRaise", "SpecifyShape",
    "Rebroadcast", "Unbroadcast", "Sum", "Prod", "Max", "Min", "All", "Any", "CAReduce",
    "ScalarOp", "Composite", "Second",
    # a shape vector with one entry set (Split's and Join's gradients build their shapes so)
    "IncSubtensor",
})
#: allocations, views and shape arithmetic: what a step's buffers are made of (nested-step cut)
_STRUCTURAL = frozenset({
    "AllocEmpty", "Alloc", "IncSubtensor", "Subtensor", "DimShuffle", "Reshape", "SpecifyShape",
    "Shape", "Shape_i", "MakeVector", "ScalarFromTensor", "TensorFromScalar", "Second", "Assert",
    "CheckAndRaise", "Unbroadcast", "ExpandDims", "Squeeze",
})
#: elementwise ops that only fill, copy or cast (``zeros_like``, ``T.cast``)
_CHEAP = frozenset({Scalar.SECOND, Scalar.IDENTITY, Scalar.CAST})
#: what a formula reads through: casts, conversions, fills and views
_FORMULA_THROUGH = frozenset({"ScalarFromTensor", "TensorFromScalar", "DimShuffle", "Rebroadcast", "Unbroadcast",
                              "SpecifyShape"})


# ------------------------------------------------------------------------------- names


def display_name(op) -> str:
    """The op's class name, for text (``Alloc``, ``Elemwise``)."""
    return _class(op)


def display_with_scalar(op, canonical=True) -> str:
    """``Elemwise{Pow}`` for an elementwise op, ``CAReduce{Add}`` for a reduction, else the class;
    ``canonical``: the scalar op under its common name (Aesara's ``ScalarMaximum`` as ``Maximum``)."""
    inner = getattr(op, "scalar_op", None)
    if inner is None:
        return _class(op)
    name = _class(inner)
    return f"{_class(op)}{{{_SCALAR_ALIASES.get(name, name) if canonical else name}}}"


#: elementwise scalar ops as a user writes them (``in_words``)
_SCALAR_WORDS = {
    "Add": "`+`", "Sub": "`-`", "Mul": "`*`", "TrueDiv": "`/`", "IntDiv": "`//`", "Pow": "`**`",
    "Sqr": "`** 2`", "Neg": "unary `-`", "Abs": "`abs`", "Maximum": "`maximum`", "Minimum": "`minimum`",
    "Switch": "`switch`", "Mod": "`%`", "LT": "`<`", "GT": "`>`", "LE": "`<=`", "GE": "`>=`", "EQ": "`eq`",
    "NEQ": "`neq`", "Identity": "a copy", "Cast": "a cast",
    "Second": "a fill (`ones_like`, or the seed of a gradient)",
    "Composite": "a fused elementwise expression",
}
#: ops by what they do for a person (``in_words``): class -> words
_OP_WORDS = {
    "Sum": "a sum", "Prod": "a product", "Max": "a max", "Min": "a min", "MaxAndArgmax": "a max",
    "Argmax": "an argmax", "All": "an `all`", "Any": "an `any`",
    "Dot": "a dot product", "Dot22": "a dot product", "Dot22Scalar": "a dot product", "_dot": "a dot product",
    "Gemv": "a dot product", "CGemv": "a dot product", "Gemm": "a dot product", "CGemm": "a dot product",
    "Ger": "an outer product", "CGer": "an outer product", "BatchedDot": "a batched dot product",
    "Reshape": "a reshape", "Join": "a concatenation", "Split": "a split", "Subtensor": "an index",
    "AdvancedSubtensor": "an index", "AdvancedSubtensor1": "an index", "IncSubtensor": "an index write",
    "AdvancedIncSubtensor": "an index write", "AdvancedIncSubtensor1": "an index write",
    "Alloc": "a broadcast", "DimShuffle": "a transpose", "Softmax": "a softmax", "SoftmaxGrad": "a softmax's gradient",
    "LogSoftmax": "a log-softmax", "DeepCopyOp": "a copy", "Shape": "a shape read", "Shape_i": "a shape read",
    "Assert": "a check", "CheckAndRaise": "a check", "Blockwise": "a batched op", "Scan": "a scan",
}


def in_words(display: str) -> str:
    """What an op shown as ``display`` (``display_with_scalar``'s text: ``Elemwise{Mul}``,
    ``CAReduce{Add}``, ``Dot22``) does, as a person reads it: ``an elementwise `*```,
    ``a sum``, ``a dot product``; the display itself for ops this vocabulary does not name."""
    cls, _, rest = display.partition("{")
    scalar_name = rest.rstrip("}")
    scalar_name = _SCALAR_ALIASES.get(scalar_name, scalar_name)
    if cls in ("Elemwise", "FusedElemwise") or (cls not in _OP_WORDS and scalar_name in _SCALAR_WORDS and cls != "CAReduce"):
        words = _SCALAR_WORDS.get(scalar_name)
        if words is None:  # tanh, exp, sigmoid: the function the user called
            return f"an elementwise `{scalar_name.lower()}`" if scalar_name else "an elementwise expression"
        if words.startswith("a ") or words.startswith("an "):
            return words
        return f"an elementwise {words}"
    if cls.startswith("Scalar") and cls[len("Scalar"):] in ("Sum", "Prod", "Max", "Min", "All", "Any"):
        return _OP_WORDS[cls[len("Scalar"):]]  # PyTensor 3.3's wrapped full reductions (ScalarSum{axes=None})
    if cls == "CAReduce" or (scalar_name and cls in ("Sum", "Prod", "Max", "Min", "All", "Any")):
        fold = _SCALARS.get(scalar_name)
        return f"a {FOLDS[fold]}" if fold in FOLDS else "a reduction"
    return _OP_WORDS.get(cls, display)


# ------------------------------------------------------------------------------- scalar ops


def is_scalar_op(op) -> bool:
    """A scalar-level op used as a node's op (PyTensor 3.3 keeps them in shape graphs)."""
    return "ScalarOp" in _mro(op)


def scalar(op) -> Scalar | None:
    """What an elementwise op, a reduction or a scalar op computes per element; None for other
    ops; ``Scalar.OTHER`` for a scalar op this vocabulary does not name."""
    inner = getattr(op, "scalar_op", None)
    if inner is None:
        if not is_scalar_op(op):
            return None
        inner = op
    name = _class(inner)
    return _SCALARS.get(_SCALAR_ALIASES.get(name, name), Scalar.OTHER)


def fused_fold(op) -> Scalar | None:
    """The fold of a reduction fused with the elementwise op it reads (PyTensor's CAReduce of a
    Composite, ``sum(sqr(x))`` as one loop: ``acc + sqr(x)``): the scalar op at the Composite's
    root when it is one of ``FOLDS``, else None."""
    inner = getattr(op, "scalar_op", None)
    if inner is None or "CAReduce" not in _mro(op) or scalar(op) is not Scalar.COMPOSITE:
        return None
    outs = getattr(getattr(inner, "fgraph", None), "outputs", None) or getattr(inner, "outputs", None) or []
    root = outs[0].owner if len(outs) == 1 else None
    if root is None:
        return None
    s = scalar(root.op)
    return s if s in FOLDS else None


#: how a user writes what an op computes: (method or function names, Python operators); by fold
#: (a reduction's kind in text, ``FOLDS``' values and "dot") or by elementwise scalar op
_SPELLINGS = {
    "sum": (frozenset({"sum", "mean", "average", "var", "std", "nansum", "norm"}), ()),
    "product": (frozenset({"prod"}), ()),
    "max": (frozenset({"max", "amax", "argmax"}), ()),
    "min": (frozenset({"min", "amin", "argmin"}), ()),
    "all": (frozenset({"all"}), ()),
    "any": (frozenset({"any"}), ()),
    "dot": (frozenset({"dot", "tensordot", "matmul", "batched_dot", "einsum"}), (ast.MatMult,)),
    Scalar.POW: (frozenset({"pow", "power", "sqr", "square"}), (ast.Pow,)),
    Scalar.SQR: (frozenset({"sqr", "square"}), (ast.Pow,)),
    Scalar.MUL: (frozenset({"mul", "multiply"}), (ast.Mult,)),
    Scalar.ADD: (frozenset({"add"}), (ast.Add,)),
    Scalar.SUB: (frozenset({"sub", "subtract"}), (ast.Sub,)),
    Scalar.TRUE_DIV: (frozenset({"true_div", "true_divide", "divide"}), (ast.Div,)),
    Scalar.NEG: (frozenset({"neg", "negative"}), (ast.USub,)),
    Scalar.ABS: (frozenset({"abs", "abs_"}), ()),
    Scalar.MAX: (frozenset({"maximum"}), ()),
    Scalar.MIN: (frozenset({"minimum"}), ()),
}


def user_spellings(op, fold: str = "") -> tuple[frozenset, tuple]:
    """(names, operators) a user writes for what ``op`` computes: ``fold`` is the reduction's
    text when ``op`` folds a history ("sum over the steps": ``sum``, ``mean``, ...); otherwise
    the elementwise op's scalar op (``Pow``: ``**``; a function such as ``Tanh``: ``tanh``) or a
    dot product (``dot``, ``@``). Nothing for ops a user does not write (fused loops, views)."""
    if fold:
        words = fold.replace("(", " ").split()
        key = "dot" if "dot" in words else next((w for w in words if w in _SPELLINGS), "")
        return _SPELLINGS.get(key, (frozenset(), ()))
    if is_dot(op):
        return _SPELLINGS["dot"]
    s = scalar(op)
    if s is None or s is Scalar.COMPOSITE:
        return frozenset(), ()
    if s is Scalar.OTHER:  # tanh, exp, log, sigmoid: the user calls a function of that name
        inner = getattr(op, "scalar_op", op)
        return frozenset({_class(inner).lower()}), ()
    return _SPELLINGS.get(s, (frozenset(), ()))


def is_cast_like(op) -> bool:
    """An elementwise cast or identity (the value goes through)."""
    return scalar(op) in (Scalar.CAST, Scalar.IDENTITY)


# ------------------------------------------------------------------------------- views and reads


def is_pass_through(op) -> bool:
    """A view that hands its input on unchanged (SpecifyShape, DeepCopyOp, Rebroadcast, ...)."""
    return _class(op) in _PASS_THROUGH


def is_elementwise(op) -> bool:
    """An elementwise op (one scalar op, or a fused composite, applied element by element)."""
    return "Elemwise" in _mro(op)


def is_dimshuffle(op) -> bool:
    """``DimShuffle`` itself (a transpose, broadcast or dropped axis), not a subclass."""
    return _class(op) == "DimShuffle"


def is_scalar_tensor(op) -> bool:
    """A conversion between a 0-d tensor and a scalar (how an index reaches Subtensor)."""
    return _class(op) in _SCALAR_TENSOR


def is_shape_read(op) -> bool:
    """``Shape`` or ``Shape_i``: reads a variable's shape, not its values."""
    return _class(op) in ("Shape", "Shape_i")


def is_shape_i(op) -> bool:
    return _class(op) == "Shape_i"


def is_index_write(op) -> bool:
    """IncSubtensor and its kin (set_subtensor/inc_subtensor, advanced forms)."""
    return "IncSubtensor" in _class(op)


def is_index_read(op) -> bool:
    """Subtensor and its kin (basic and advanced indexing), not the writes."""
    return "Subtensor" in _class(op) and not is_index_write(op)


def is_formula_pass(op) -> bool:
    """What a size formula reads through: casts, conversions, fills and shape-preserving views."""
    return _class(op) in _FORMULA_THROUGH or scalar(op) in (Scalar.CAST, Scalar.IDENTITY, Scalar.SECOND)


# ------------------------------------------------------------------------------- products and folds


def is_dot(op) -> bool:
    """A matrix/vector product (``Dot`` and the forms backends rewrite it to, before BLAS)."""
    return _class(op) in _DOTS or "Dot" in _mro(op)


def dot_operands(op) -> tuple[int, int] | None:
    """(left, right) input positions of a product's operands, BLAS forms included, else None."""
    return _DOT_OPERANDS.get(_class(op))


def is_max_and_argmax(op) -> bool:
    """Theano's and Aesara's fused max-and-argmax (outputs: the max, then the argmax)."""
    return _class(op) == "MaxAndArgmax"


def is_sum(op) -> bool:
    """``Sum`` (a CAReduce of Add with its dtype and accumulator dtype)."""
    return _class(op) == "Sum"


def is_max_reduce(op) -> bool:
    """A max reduction (``Max``, or a CAReduce of maximum)."""
    return _class(op) in ("Max", "CAReduce") and scalar(op) is Scalar.MAX


def is_blockwise(op) -> bool:
    """PyTensor's Blockwise: a core op looped over leading batch dims."""
    return _class(op) == "Blockwise"


def is_softmax(op) -> bool:
    """A softmax over rows (Softmax, SoftmaxWithBias, LogSoftmax, ...)."""
    return "Softmax" in _class(op)


# ------------------------------------------------------------------------------- shapes


def is_reshape(op) -> bool:
    return _class(op) == "Reshape"


def is_arange(op) -> bool:
    return _class(op) == "ARange"


def shape_inputs(node) -> list | None:
    """The inputs that decide a node's output shape (ARange, Alloc, AllocEmpty, Reshape), else None."""
    first = _SHAPE_FROM_INPUTS.get(_class(node.op))
    return None if first is None else list(node.inputs[first:])


def is_shape_arithmetic(op) -> bool:
    """An op that may be run to size a buffer: shape arithmetic, views of shape vectors, small
    reductions, or a scalar-level op (``EQ``, ``Add`` on scalars)."""
    return _class(op) in _SHAPE_ARITHMETIC or is_scalar_op(op)


def is_structural(op) -> bool:
    """Allocations, views, shape arithmetic, scalar ops, fills and casts: what decides a step's
    buffers (kept when a large step is cut down to size its nested scans)."""
    return _class(op) in _STRUCTURAL or is_scalar_op(op) or scalar(op) in _CHEAP


#: every op class name this module knows (tests/test_architecture.py reads it)
KNOWN = (_PASS_THROUGH | _DOTS | set(_DOT_OPERANDS) | _SCALAR_TENSOR | set(_SHAPE_FROM_INPUTS) | _SHAPE_ARITHMETIC
         | _STRUCTURAL | _FORMULA_THROUGH | set(_SCALAR_ALIASES) | {s.value for s in Scalar if s is not Scalar.OTHER}
         | {"MaxAndArgmax", "Sum", "Max", "Blockwise", "Elemwise", "IncSubtensor", "Softmax", "Shape", "Shape_i"})
