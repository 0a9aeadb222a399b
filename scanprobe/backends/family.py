"""What Theano, PyTensor and Aesara share: capture hooks, build without linking, modes, profiles.

Adapters (``theano.py``, ``pytensor.py``, ``aesara.py``) import their library, fill ``self.api``
(a ``base.Api``) and answer the few questions whose answer differs between libraries (scan roles
and taps, subtensor indices, shape inference). Version differences are decided by feature tests
on the loaded library, never by version strings.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from abc import abstractmethod

from scanprobe import records as R
from scanprobe.backends.base import Backend, Built, ScanInfo
from scanprobe.backends.hooks import Hooks, TraceLimit
from scanprobe.backends.wrappers import Wrappers
from scanprobe.errors import ScanprobeError

_BUILD = threading.local()
#: op class -> whether its infer_shape takes an fgraph first (see FamilyBackend.infer_shape)
_TAKES_FGRAPH: dict = {}

#: Added with the save-mem rewrite: the first shrinks the Alloc that the kept rows are sliced from
#: (without it, FAST_COMPILE keeps a full-size zero Alloc sliced to the rows kept); the second
#: merges `hs[-1]` of `hs = buffer[1:]` into one index on the buffer, the only form save-mem reads
#: (without it, FAST_COMPILE keeps every row of a state read as `hs[-1]`).
SLICE_REWRITES = ("local_subtensor_of_alloc", "local_subtensor_merge")
#: PyTensor >= 3 drops scan outputs nothing reads in a rewrite of its own (older backends' save-mem
#: does it); added where the backend registers it
UNUSED_REWRITES = ("scan_remove_unused",)


class _StopBeforeLink(Exception):
    """Raised from FunctionMaker.create while scanprobe only wants the optimized graph."""

    def __init__(self, maker, args, kwargs):
        super().__init__("scanprobe stops before linking")
        self.maker, self.args, self.kwargs = maker, args, kwargs


#: Rewrites left out when scanprobe optimizes a scan's inner graph to read its nested scans'
#: buffers: elementwise fusion and in-place passes run after the scan rewrites (save-mem at 1.61 in
#: optdb, fusion and inplace from 49) and change no buffer size, but cost most of the time on big
#: steps (a 4,800-op step: 30 s).
_INNER_EXCLUDE = ("fusion", "inplace", "elemwise_fusion", "add_destroy_handler")


_UNSET = object()


def _lean(mode):
    """``mode`` without the rewrites of _INNER_EXCLUDE (as it is where it cannot exclude)."""
    try:
        return mode.excluding(*_INNER_EXCLUDE)
    except Exception:  # noqa: BLE001
        return mode


class _Profiling:
    """Turns on ``config.profile`` and ``config.profile_memory`` for a ``with`` block."""

    def __init__(self, config):
        self.config = config

    def __enter__(self):
        self.old = (self.config.profile, self.config.profile_memory)
        self.config.profile, self.config.profile_memory = True, True
        return self

    def __exit__(self, *exc):
        self.config.profile, self.config.profile_memory = self.old
        return False


class _CompileRecorder:
    """Records every function linked while it is active (``compiled``: the functions, in order)
    and the positional arguments of each one's first call (``first_args``, by ``id``)."""

    def __init__(self, maker_cls):
        self.maker_cls = maker_cls
        self.compiled: list = []
        self.first_args: dict = {}
        self._undo: list = []

    def __enter__(self):
        maker_cls = self.maker_cls
        original_create = maker_cls.__dict__["create"]
        recorder = self

        def create(maker, *a, **kw):
            fn = original_create(maker, *a, **kw)
            recorder.compiled.append(fn)
            fn_cls = type(fn)
            if not getattr(fn_cls, "_scanprobe_wrapped", False):
                original_call = fn_cls.__call__

                def call(this, *args, **kwargs):
                    recorder.first_args.setdefault(id(this), args)
                    return original_call(this, *args, **kwargs)

                fn_cls.__call__ = call
                fn_cls._scanprobe_wrapped = True
                recorder._undo.append(lambda: (setattr(fn_cls, "__call__", original_call),
                                               setattr(fn_cls, "_scanprobe_wrapped", False)))
            return fn

        maker_cls.create = create
        self._undo.append(lambda: setattr(maker_cls, "create", original_create))
        return self

    def __exit__(self, *exc):
        while self._undo:
            self._undo.pop()()
        return False


class FamilyBackend(Wrappers, Hooks, Backend):
    """Shared implementation for the Theano family."""

    #: Names of the save-mem rewrites in the backend's optdb (any one running is enough).
    save_mem_rewrites: tuple[str, ...] = ()

    def __init__(self):
        self.api = None
        self._saved: list = []

    def version(self):
        return self.api.module.__version__ if self.api else ""

    def package_dir(self) -> str:
        return os.path.realpath(os.path.dirname(self.api.module.__file__))

    #: the module whose ``get_module_cache()`` is the C linker's compile cache
    c_linker_module: str = ""

    def warm_compile_cache(self) -> None:
        """Every key of the C compile cache is read on its first use in a process (0.7 s for a
        Theano cache of 500 modules); read in a fork server, its children have it."""
        if not self.c_linker_module or not getattr(self.api.config, "cxx", ""):
            return
        import importlib

        importlib.import_module(self.c_linker_module).get_module_cache()

    # ------------------------------------------------------------------ build
    def resolve_mode(self, mode):
        api = self.api
        if mode is None:
            return api.get_mode(None), str(self._config_mode())
        if isinstance(mode, str):
            try:
                return api.get_mode(mode), mode
            except Exception as exc:  # the backend's own message is the useful part
                raise ScanprobeError(
                    f"unknown mode {mode!r} for {self.name}: {exc}",
                    hint="use FAST_RUN or FAST_COMPILE (or a mode name your backend defines)",
                ) from None
        linker = getattr(mode, "provided_linker", None)
        name = linker if isinstance(linker, str) else getattr(linker, "__class__", type(linker)).__name__
        return mode, f"Mode(linker={name})"

    def _config_mode(self):
        cfg = self.api.config
        if cfg.mode == "Mode":  # the default: the optimizer and linker flags decide
            return f"default (optimizer={cfg.optimizer}, linker={cfg.linker})"
        return cfg.mode

    def build(self, captured, mode_override, profile=None) -> Built:
        """Run the backend's own ``function`` on the captured arguments up to linking."""
        kwargs = dict(captured.kwargs)
        if profile is not None:
            kwargs["profile"] = profile
        args = list(captured.args)
        user_mode = kwargs.pop("mode", None)
        if len(args) > 2:  # mode passed positionally: function(inputs, outputs, mode, ...)
            user_mode = args.pop(2)
        mode_value = mode_override if mode_override is not None else user_mode
        mode, label = self.resolve_mode(mode_value)
        t0 = time.perf_counter()
        maker_cls = self.api.FunctionMaker
        original_create = maker_cls.__dict__["create"]

        def create(maker, *a, **kw):
            if getattr(_BUILD, "stop", False):
                raise _StopBeforeLink(maker, a, kw)
            return original_create(maker, *a, **kw)

        fg_cls = self.api.FunctionGraph
        original_replace = fg_cls.__dict__["replace"]

        def replace(fgraph, var, new_var, *a, **kw):
            # the user's line follows a variable through every rewrite (not every rewrite copies
            # traces: PyTensor 3.3's scan rewrites leave new Scan nodes without one)
            trace = getattr(var.tag, "trace", None)
            if trace and not getattr(new_var.tag, "trace", None):
                new_var.tag.trace = trace
            return original_replace(fgraph, var, new_var, *a, **kw)

        _BUILD.stop = True
        maker_cls.create = create
        fg_cls.replace = replace
        try:
            with self.without_traces():
                self.api.function(*args, mode=mode, **kwargs)
        except _StopBeforeLink as stop:
            return Built(stop.maker, stop.args, stop.kwargs, mode, label, time.perf_counter() - t0,
                         from_cli=mode_override is not None)
        finally:
            _BUILD.stop = False
            maker_cls.create = original_create
            fg_cls.replace = original_replace
        raise RuntimeError("the backend linked the function before scanprobe could stop it")

    def built_from_function(self, fn) -> Built:
        maker = fn.maker
        _, label = self.resolve_mode(maker.mode)
        return Built(maker, (), {}, maker.mode, f"{label}, as compiled", 0.0, function=fn)

    def realize(self, built):
        if built.function is None:
            built.function = built.maker.create(*built.create_args, **built.create_kwargs)
        return built.function

    def compile(self, inputs, outputs, **kwargs):
        return self.api.function(inputs, outputs, **kwargs)

    def scalar_eval_modes(self):
        """Modes that evaluate shape arithmetic without rewriting it: a Python linker (nothing to
        compile), then a compiled one for graphs the Python implementations refuse."""
        if not hasattr(self, "_eval_modes"):
            Mode = self.api.Mode
            self._eval_modes = [Mode(linker="py", optimizer=None), Mode(linker="cvm", optimizer=None)]
        return self._eval_modes

    def without_traces(self):
        """A context in which new graph nodes record no user stack trace.

        Every node a backend creates walks the Python stack to record where it was made; frames
        inside the backend are skipped without counting, so deep internal recursion (a scan's
        shape inference over a large inner graph) makes that walk quadratic. scanprobe reads sites
        from its own captures, never from these traces, so its own graph work runs without them.
        """
        return TraceLimit(self.api.config)

    # ------------------------------------------------------------------ mode facts
    def mode_info(self, built) -> R.ModeInfo:
        mode = built.mode
        linker = getattr(mode, "provided_linker", None)
        linker_name = linker if isinstance(linker, str) else type(linker).__name__
        runs, reason = self._save_mem_selected(self._query(mode), built.mode_label)
        return R.ModeInfo(
            name=built.mode_label,
            linker=str(linker_name),
            save_mem=runs,
            save_mem_reason=reason,
            save_mem_tag=self.save_mem_tag,
            save_mem_including=", ".join(repr(t) for t in self._save_mem_tags()),
            from_cli=built.from_cli,
            checkpoints=self.checkpoints_code,
        )

    @staticmethod
    def _query(mode):
        query = getattr(mode, "_optimizer", None)
        if query is None or isinstance(query, str):
            query = getattr(mode, "provided_optimizer", None)
        return query

    def save_mem_runs(self, mode) -> bool:
        return self._save_mem_selected(self._query(mode), "")[0]

    def with_save_mem(self, mode):
        return mode.including(*self._save_mem_tags())

    def _save_mem_tags(self) -> list[str]:
        """save-mem and the rewrites it needs beside it, those this backend registers."""
        db = getattr(self.api.optdb, "__db__", None)
        unused = [t for t in UNUSED_REWRITES if db is not None and t in db]
        return [self.save_mem_tag, *SLICE_REWRITES, *unused]

    def save_mem_code(self, mode_label: str) -> str:
        base = mode_label if not mode_label.startswith("default") else "FAST_RUN"
        tags = ", ".join(repr(t) for t in self._save_mem_tags())
        if base.startswith("Mode("):
            return f"your_mode.including({tags})"
        return f"{self.module_name}.compile.mode.get_mode({base!r}).including({tags})"

    def _save_mem_selected(self, query, label):
        """Whether the mode's rewrite query selects a save-mem rewrite, and why not."""
        db = getattr(self.api.optdb, "__db__", None)
        if db is None or not hasattr(query, "include"):
            return True, ""
        include, exclude = set(query.include), set(query.exclude)
        require = set(getattr(query, "require", ()))
        if not include:
            return False, f"the mode {label} runs no graph rewrites (optimizer=None)"
        excluded_by = []
        present = [n for n in self.save_mem_rewrites if db.get(n)]
        for name in present:
            obj = next(iter(db.get(name)))
            tags = {t for t, members in db.items() if obj in members}
            hit = tags & exclude
            if hit:
                excluded_by.extend(sorted(hit))
                continue
            if (tags & include) and require <= tags:
                return True, ""
        if excluded_by:
            return False, f"the save-mem rewrite is excluded by the mode ({', '.join(sorted(set(excluded_by)))})"
        return False, (
            f"the mode {label} does not run the save-mem rewrite "
            f"({' and '.join(present) or 'it'} {'are' if len(present) > 1 else 'is'} in fast_run; the mode includes "
            f"{', '.join(sorted(include))})"
        )

    # ------------------------------------------------------------------ graphs
    def scan_info(self, op) -> ScanInfo:
        return ScanInfo(
            name=op.name,
            as_while=bool(self._as_while(op)),
            truncate_gradient=int(getattr(op, "truncate_gradient", -1) or -1),
            taps=self._taps(op),
            inner_inputs=list(self._inner_inputs(op)),
            inner_outputs=list(self._inner_outputs(op)),
        )

    @abstractmethod
    def _taps(self, op) -> dict:
        """Tap lists per role of a Scan op."""

    @abstractmethod
    def _as_while(self, op) -> bool:
        """Whether a Scan op is a while-loop."""

    def _inner_inputs(self, op):
        return op.inner_inputs

    def _inner_outputs(self, op):
        return op.inner_outputs

    def inner_graph(self, node):
        return list(self._inner_inputs(node.op)), list(self._inner_outputs(node.op))

    def run_inner_graph(self, node):
        """(inputs, outputs) of the inner graph a Scan runs: optimized the way the op itself does
        when it is linked (its own mode, not the outer function's: in FAST_COMPILE a nested scan
        still gets save-mem inside), stopped before linking. Where the outer optimization has
        already optimized the inner graph (PyTensor >= 3.2: linking only), that graph. One
        optimization per node: walking the same graph again (other input sizes) reuses it."""
        cache = self.__dict__.setdefault("_run_inner", weakref.WeakKeyDictionary())
        if node not in cache:
            cache[node] = self._run_inner_graph(node)
        return cache[node]

    def _run_inner_graph(self, node):
        op = node.op
        linked = self._linked_inner(op)
        if linked is not None:
            return linked
        if not self._optimizes_inner(op):
            return self.inner_graph(node)
        if not isinstance(getattr(type(op), "fn", None), property):  # Theano: make_thunk compiles
            return self.optimize_like_inner(node, *self.inner_graph(node)) or self.inner_graph(node)
        # PyTensor <= 3.1, Aesara: the op's own `fn` property (it prepares the graph its way), with
        # a copy of its graph (the property optimizes op.fgraph in place) and the lean mode
        own = {key: op.__dict__.get(key, _UNSET) for key in ("fgraph", "mode_instance", "mode")}
        lean = _lean(self._inner_mode(op))

        def prepare():
            if own["fgraph"] is not _UNSET and own["fgraph"] is not None:
                op.__dict__["fgraph"] = own["fgraph"].clone()
            if own["mode_instance"] not in (_UNSET, None):  # Aesara: the op's mode_instance
                op.__dict__["mode_instance"] = lean
            elif own["mode"] != "FAST_COMPILE":  # PyTensor: what the property would make, lean
                op.__dict__["mode"] = lean
            op.fn

        try:
            return self._optimized_before_link(prepare) or self.inner_graph(node)
        finally:
            for key, value in own.items():
                if value is _UNSET:
                    op.__dict__.pop(key, None)
                else:
                    op.__dict__[key] = value

    def optimize_like_inner(self, node, inputs, outputs):
        """(inputs, outputs) of the graph ``inputs -> outputs`` optimized the way the Scan ``node``
        optimizes its inner graph when linked (its own mode, lean), stopped before linking; None
        where the op runs its inner graph as it stands (PyTensor >= 3.2, or linked already)."""
        op = node.op
        if self._linked_inner(op) is not None or not self._optimizes_inner(op):
            return None
        mode = _lean(self._inner_mode(op))
        return self._optimized_before_link(
            lambda: self.api.function(inputs, outputs, mode=mode, on_unused_input="ignore", accept_inplace=True))

    @staticmethod
    def _linked_inner(op):
        """(inputs, outputs) of the inner function a Scan op has linked already (the module called
        the function), else None."""
        fn = op.__dict__.get("_fn") or op.__dict__.get("fn")
        if fn is not None and hasattr(fn, "maker"):
            return list(fn.maker.fgraph.inputs), list(fn.maker.fgraph.outputs)
        return None

    @staticmethod
    def _optimizes_inner(op) -> bool:
        """False where the op links its inner graph as it stands (PyTensor >= 3.2: the outer
        optimization already optimized it)."""
        return not (hasattr(op, "compile_fn") and hasattr(op, "link_mode"))

    def scan_step_mode(self, op):
        """The mode a Scan op optimizes and links its step with (a new scan given it builds its
        step the same way)."""
        return self._inner_mode(op)

    def _inner_mode(self, op):
        """The mode a Scan op optimizes its inner graph with when it is linked."""
        own_mode = op.__dict__.get("mode_instance")
        if own_mode is not None:  # Theano, Aesara
            return own_mode
        name = op.__dict__.get("mode")
        if isinstance(getattr(type(op), "fn", None), property):  # PyTensor <= 3.1: what the property makes
            return self.api.Mode("cvm", "fast_run") if name in (None, "FAST_RUN") else self.api.get_mode(name)
        return self.api.get_mode(None)

    def _optimized_before_link(self, prepare):
        """(inputs, outputs) of the graph that ``prepare()`` has the backend optimize, stopped at
        FunctionMaker.create (nothing is linked); None where preparing fails."""
        maker_cls = self.api.FunctionMaker
        original_create = maker_cls.__dict__["create"]

        def create(maker, *a, **kw):
            raise _StopBeforeLink(maker, a, kw)

        maker_cls.create = create
        try:
            with self.without_traces():
                prepare()
        except _StopBeforeLink as stop:
            fg = stop.maker.fgraph
            return list(fg.inputs), list(fg.outputs)
        except Exception:  # noqa: BLE001 - the graph cannot be prepared here
            return None
        finally:
            maker_cls.create = original_create
        return None

    def infer_shape(self, node, shapes):
        # PyTensor < 3.3 and Aesara: infer_shape(fgraph, node, shapes); Theano and PyTensor 3.3:
        # infer_shape(node, shapes). Decided per op class from the method's own signature.
        cls = type(node.op)
        takes_fgraph = _TAKES_FGRAPH.get(cls)
        if takes_fgraph is None:
            import inspect

            try:
                params = [p for p in inspect.signature(cls.infer_shape).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
                takes_fgraph = len(params) >= 4
            except (TypeError, ValueError):
                takes_fgraph = True
            _TAKES_FGRAPH[cls] = takes_fgraph
        if takes_fgraph:
            return node.op.infer_shape(None, node, shapes)
        return node.op.infer_shape(node, shapes)

    def static_dims(self, var) -> list:
        t = var.type
        shape = getattr(t, "shape", None)
        if isinstance(shape, tuple) and len(shape) == t.ndim:  # PyTensor, Aesara: static shapes
            return [int(s) if isinstance(s, (int,)) and s >= 0 else None for s in shape]
        return [1 if b else None for b in t.broadcastable]  # Theano: broadcastable dims are 1

    def is_user_opaque(self, op) -> bool:
        ofg = self._OpFromGraph
        if ofg is None or not isinstance(op, ofg):
            return False
        if getattr(op, "is_inline", getattr(op, "inline", False)):
            return False
        # the backend's rewrites make OpFromGraph subclasses of their own (fused elementwise
        # loops, scalar subtensors): those live in the backend's package, the user's do not
        return type(op) is ofg or not type(op).__module__.startswith(self.module_name + ".")

    _OpFromGraph = None

    def record_compiles(self):
        return _CompileRecorder(self.api.FunctionMaker)

    # ------------------------------------------------------------------ profiling
    def profiled_mode(self, built):
        linker = self.mode_info(built).linker.lower()
        if any(k in linker for k in ("vm", "cvm", "py", "stack", "loop")):
            return built.mode, built.mode_label
        return self.api.get_mode("CVM"), "CVM (twin: the user's linker records no profile)"

    def profiling(self):
        return _Profiling(self.api.config)

    def profile_figures(self, fn):
        prof = fn.profile
        shapes = getattr(prof, "variable_shape", {}) or {}
        times = []
        for key, secs in (getattr(prof, "apply_time", {}) or {}).items():
            node = key[1] if isinstance(key, tuple) else key
            times.append((node, float(secs)))
        return shapes, times
