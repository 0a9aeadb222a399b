"""The backend interface: everything scanprobe asks of Theano, PyTensor or Aesara.

Adapters in this folder are the only code that imports a backend. Everything outside
``backends/`` goes through a ``Backend`` object: the methods declared here, and ``api``, an
``Api`` record of the backend's graph classes and functions (the same names in every backend of
the family). An adapter that leaves a field of ``Api`` unset fails when it loads.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Api:
    """The graph classes and functions of one backend (what the walker and the fixes use)."""

    module: Any  # the top-level package (theano, pytensor, aesara)
    function: Any
    scan: Any
    FunctionMaker: Any
    get_mode: Any
    Mode: Any
    optdb: Any
    config: Any
    Scan: Any
    Alloc: Any
    AllocEmpty: Any
    Subtensor: Any
    IncSubtensor: Any
    DimShuffle: Any
    Elemwise: Any
    CAReduce: Any
    Dot: Any
    Shape: Any
    Shape_i: Any
    FunctionGraph: Any
    Constant: Any
    SharedVariable: Any
    Variable: Any
    T: Any  # the tensor module (theano.tensor, pytensor.tensor)
    grad: Any
    clone_replace: Any
    equal_computations: Any
    #: ``vectorize_graph`` where the backend has one (PyTensor), else None
    vectorize_graph: Any = None

    def __post_init__(self):
        missing = [f.name for f in fields(self) if f.name != "vectorize_graph" and getattr(self, f.name) is None]
        if missing:
            raise TypeError(f"backend adapter left Api fields unset: {', '.join(missing)}")


@dataclass
class ScanInfo:
    """What a Scan op says about itself, the same in every backend."""

    name: str
    as_while: bool
    truncate_gradient: int
    #: tap lists per role: {"mit_mot": [[...], ...], "mit_sot": [...], "sit_sot": [...]}
    taps: dict
    inner_inputs: list
    inner_outputs: list


@dataclass
class Built:
    """An optimized, not yet linked function graph (``Backend.build``)."""

    maker: Any
    create_args: tuple = ()
    create_kwargs: dict = field(default_factory=dict)
    mode: Any = None
    mode_label: str = ""
    seconds: float = 0.0
    #: True when the mode came from the command line (--mode) rather than the user's code
    from_cli: bool = False
    function: Any = None

    @property
    def fgraph(self):
        return self.maker.fgraph


class Backend(ABC):
    """One graph library (Theano, PyTensor, Aesara) behind the interface scanprobe needs.

    A backend imports its library lazily (``load``), installs capture hooks while a user module
    runs, turns a captured ``function(...)`` call into an optimized graph without linking it
    (``build``), links it on demand (``realize``), and answers the questions the graph walker,
    the fixes and the runners ask (scan roles and taps, shape inference, modes, profiles).
    """

    #: Short name used on the command line (``--backend``).
    name: str = ""
    #: The importable top-level module.
    module_name: str = ""
    #: pip requirement that installs it, for error hints.
    install_hint: str = ""
    #: The tag that adds the save-mem rewrite to a mode (``mode.including(tag)``).
    save_mem_tag: str = ""
    #: True where a compiled function keeps only its optimized graph (PyTensor optimizes the
    #: graph it was given in place; Theano's ``maker.outputs`` are an unoptimized copy).
    compiled_graph_is_optimized: bool = False

    #: The backend's clone function as a user writes it (``theano.clone``), for suggested code.
    clone_code: str = ""
    #: The backend's ``scan_checkpoints`` as a user's code calls it, for suggested fixes.
    checkpoints_code: str = ""
    #: Why ``--device cuda`` cannot run this backend ("" when its route is PyTensor's JAX linker).
    no_gpu_reason: str = ""

    api: Api | None = None

    def installed(self) -> bool:
        """True when the library can be found, without importing it."""
        return importlib.util.find_spec(self.module_name) is not None

    # ------------------------------------------------------------------ loading
    @abstractmethod
    def load(self, notes: list[str]) -> Any:
        """Import the library (setting what it needs first); append one-line notes for the user."""

    @abstractmethod
    def version(self) -> str:
        """The library's version string."""

    @abstractmethod
    def package_dir(self) -> str:
        """The folder the library is installed in (its own frames are not the user's)."""

    def warm_compile_cache(self) -> None:
        """Read the library's compile cache index now, once, for the processes forked after
        (``runners.forkserver``); a library without one does nothing."""

    @abstractmethod
    def install_hooks(self, session) -> None:
        """Route the library's ``function`` and ``scan`` through ``session`` while user code runs."""

    @abstractmethod
    def remove_hooks(self) -> None:
        """Undo ``install_hooks``."""

    def models_in(self, namespace: dict) -> list:
        """(name, model) for each probabilistic model (PyMC) bound in a user's module namespace."""
        return []

    def model_functions(self, model) -> tuple[list, dict]:
        """What a sampler compiles for ``model`` (``backends.pymc.ModelFunction``s), and the
        model's initial point by variable name (what those functions' inputs start from)."""
        return [], {}

    def is_model(self, obj) -> bool:
        return False

    @abstractmethod
    def record_compiles(self):
        """A context recording every function linked inside it (``.compiled``) and each one's first
        call's positional arguments (``.first_args[id(fn)]``); the pytest plugin's view of a test."""

    def is_variable(self, obj) -> bool:
        """Whether ``obj`` is a graph variable (symbolic), not a value."""
        return isinstance(obj, self.api.Variable)

    # ------------------------------------------------------------------ compiling
    @abstractmethod
    def resolve_mode(self, mode) -> tuple[Any, str]:
        """Mode object and a readable label for a user's ``mode=`` value or ``--mode``."""

    @abstractmethod
    def build(self, captured, mode_override, profile=None) -> Built:
        """Optimize the graph of a captured compile in a mode without linking it."""

    @abstractmethod
    def built_from_function(self, fn) -> Built:
        """A ``Built`` for a function that was already compiled (e.g. inside a library)."""

    @abstractmethod
    def realize(self, built: Built) -> Any:
        """Link a built graph into the callable function the user's code expects."""

    @abstractmethod
    def compile(self, inputs, outputs, **kwargs) -> Any:
        """The backend's own ``function(inputs, outputs, ...)``, unhooked."""

    @abstractmethod
    def scalar_eval_modes(self) -> list:
        """Modes, in order of preference, in which scanprobe evaluates the scalars that size
        buffers (no graph rewrites: the graph is computed as it stands)."""

    @abstractmethod
    def without_traces(self):
        """A context in which new graph nodes record no user stack trace (see family.py)."""

    # ------------------------------------------------------------------ modes
    @abstractmethod
    def mode_info(self, built: Built):
        """``records.ModeInfo``: the mode analysed and whether its save-mem rewrite runs."""

    @abstractmethod
    def save_mem_runs(self, mode) -> bool:
        """Whether a mode runs the save-mem rewrite."""

    @abstractmethod
    def with_save_mem(self, mode) -> Any:
        """The mode with the save-mem rewrite (and the rewrite that shrinks what it slices) added."""

    @abstractmethod
    def save_mem_code(self, mode_label: str) -> str:
        """The ``mode=`` expression a user writes to get ``with_save_mem`` of a mode."""

    # ------------------------------------------------------------------ graphs
    @abstractmethod
    def scan_info(self, op) -> ScanInfo:
        """Taps per role, name, while-ness, truncate_gradient and inner graph of a Scan op."""

    @abstractmethod
    def scan_roles(self, node, thawed=False):
        """An object with ``outer_in_*`` / ``outer_out_*`` / ``inner_*`` lists (ScanArgs);
        ``thawed``: its inner graph is a copy that can be cloned and rewritten (PyTensor >= 3.1.1
        freezes inner graphs), with the names and traces of the original."""

    @abstractmethod
    def subtensor_indices(self, node) -> list:
        """The index entries of a Subtensor node (ints, variables, slices of them)."""

    @abstractmethod
    def scan_args_copy(self, node):
        """A Scan node's roles over a fresh copy of its inner graph (lists free to edit)."""

    @abstractmethod
    def scan_from_args(self, node, args) -> list:
        """The outputs of a new Scan node built from edited roles, with ``node``'s settings."""

    @abstractmethod
    def inc_subtensor_indices(self, node) -> list:
        """The index entries of an IncSubtensor node (set_subtensor/inc_subtensor)."""

    @abstractmethod
    def infer_shape(self, node, shapes) -> list:
        """The op's own shape inference (signatures differ between backends)."""

    @abstractmethod
    def static_dims(self, var) -> list:
        """The dims a variable's type fixes (int), None for the others."""

    @abstractmethod
    def inner_graph(self, node):
        """(inputs, outputs) of a Scan's inner graph that may be cloned (thawed where frozen)."""

    def wrapper_graph(self, op):
        """(inner inputs, inner outputs) of a wrapper op (an OpFromGraph), in variables that can
        be cloned with new inputs (a frozen inner graph is thawed), or None."""
        fg = getattr(op, "fgraph", None)
        if fg is None or not hasattr(fg, "inputs"):
            return None
        if hasattr(fg, "unfreeze"):
            fg = fg.unfreeze()
        return list(fg.inputs), list(fg.outputs)

    def run_wrapper_graph(self, node):
        """(inputs, outputs) of the inner graph an OpFromGraph node really runs (optimized as the
        op does when it is linked), without linking it; None where that cannot be told."""
        return None

    @abstractmethod
    def run_inner_graph(self, node):
        """(inputs, outputs) of the inner graph a Scan really runs (optimized in the op's own mode),
        without linking it."""

    def optimize_like_inner(self, node, inputs, outputs):
        """A graph optimized the way the Scan ``node`` optimizes its inner graph, or None."""
        return None

    @abstractmethod
    def is_user_opaque(self, op) -> bool:
        """Whether an op is an OpFromGraph the user made (not one the backend's rewrites made)
        that is not inlined."""

    def is_scan(self, node_or_op) -> bool:
        op = getattr(node_or_op, "op", node_or_op)
        return isinstance(op, self.api.Scan)

    # ------------------------------------------------------------------ profiling
    @abstractmethod
    def profiled_mode(self, built: Built) -> tuple[Any, str]:
        """(mode, label) of a twin whose profile records per-node shapes (a VM linker)."""

    @abstractmethod
    def profiling(self):
        """A context in which compiled functions collect memory profiles."""

    @abstractmethod
    def profile_figures(self, fn) -> tuple[dict, list]:
        """(variable -> shape, [(apply node, seconds)]) from a profiled function's last call."""
