"""What Theano, PyTensor and Aesara share: capture, build without linking, and graph walking.

Subclasses (``theano.py``, ``pytensor.py``) only say where each class and helper lives.
Everything here touches backend objects through ``self.api`` (a namespace the subclass fills).
"""

from __future__ import annotations

import dataclasses

import threading
import time
from abc import abstractmethod
from typing import Any

import numpy as np

from scanprobe import records as R
from scanprobe.backends.base import Backend
from scanprobe.backends.graphs import ancestors, toposort
from scanprobe.errors import ScanprobeError

_BUILD = threading.local()


class _StopBeforeLink(Exception):
    """Raised from FunctionMaker.create while scanprobe only wants the optimized graph."""

    def __init__(self, maker, args, kwargs):
        super().__init__("scanprobe stops before linking")
        self.maker, self.args, self.kwargs = maker, args, kwargs


class Built:
    """An optimized, not yet linked function graph."""

    def __init__(self, maker, create_args, create_kwargs, mode, mode_label, seconds):
        self.maker = maker
        self.create_args = create_args
        self.create_kwargs = create_kwargs
        self.mode = mode
        self.mode_label = mode_label
        self.seconds = seconds
        self.function = None


class _TraceLimit:
    """Sets the backend's traceback limit to 0 for the duration of a ``with`` block."""

    def __init__(self, config):
        self.config = config
        self.saved = None

    def __enter__(self):
        cfg = self.config
        try:
            if hasattr(cfg, "traceback__limit"):  # PyTensor
                self.saved = ("traceback__limit", cfg.traceback__limit)
                cfg.traceback__limit = 0
            else:  # Theano: config.traceback.limit
                self.saved = ("limit", cfg.traceback.limit)
                cfg.traceback.limit = 0
        except Exception:  # noqa: BLE001 - a config without the flag: nothing to do
            self.saved = None
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            name, value = self.saved
            if name == "traceback__limit":
                self.config.traceback__limit = value
            else:
                self.config.traceback.limit = value
        return False


@dataclasses.dataclass
class _AsCaptured:
    """The two fields of a captured call that ``rewritten`` reads and replaces."""

    args: tuple
    kwargs: dict
    function: object = None
    built: object = None


class FamilyBackend(Backend):
    #: True where a compiled function keeps only its optimized graph (PyTensor optimizes the
    #: graph it was given in place; Theano's ``maker.outputs`` are an unoptimized copy).
    compiled_graph_is_optimized = False

    """Shared implementation for the Theano family."""

    #: Names of the save-mem rewrites in the backend's optdb (any one running is enough).
    save_mem_rewrites: tuple[str, ...] = ()
    #: Tag that adds them to a mode: ``mode.including(save_mem_tag)``.
    save_mem_tag: str = ""

    def __init__(self):
        self.api: Any = None
        self._saved: list[tuple[Any, str, Any]] = []

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _function_homes(self):
        """(object, attribute) pairs through which users reach ``function``."""

    @abstractmethod
    def _scan_homes(self):
        """(object, attribute) pairs through which users reach ``scan``."""

    def install_hooks(self, session) -> None:
        api = self.api
        original_function = api.function
        original_scan = api.scan

        def function(*args, **kwargs):
            return session.capture_function(original_function, args, kwargs)

        function.__doc__ = original_function.__doc__
        function.__wrapped__ = original_function

        def scan(*args, **kwargs):
            return session.capture_scan(original_scan, args, kwargs)

        scan.__doc__ = original_scan.__doc__
        scan.__wrapped__ = original_scan

        for obj, attr in self._function_homes():
            self._swap(obj, attr, function)
        for obj, attr in self._scan_homes():
            self._swap(obj, attr, scan)

    def _swap(self, obj, attr, new):
        if hasattr(obj, attr):
            self._saved.append((obj, attr, getattr(obj, attr)))
            setattr(obj, attr, new)

    def remove_hooks(self) -> None:
        while self._saved:
            obj, attr, old = self._saved.pop()
            setattr(obj, attr, old)

    # ------------------------------------------------------------------ build
    def resolve_mode(self, mode):
        """Mode object and a readable label for a user's ``mode=`` value or ``--mode``."""
        api = self.api
        if mode is None:
            label = str(self._config_mode())
            return api.get_mode(None), label
        if isinstance(mode, str):
            try:
                return api.get_mode(mode), mode
            except Exception as exc:  # the backend's own message is the useful part
                raise ScanprobeError(
                    f"unknown mode {mode!r} for {self.name}: {exc}",
                    hint="use FAST_RUN or FAST_COMPILE (or a mode name your backend defines)",
                ) from None
        linker = getattr(mode, "provided_linker", None)
        return mode, f"Mode(linker={getattr(linker, '__class__', type(linker)).__name__ if not isinstance(linker, str) else linker})"

    def _config_mode(self):
        cfg = self.api.config
        if cfg.mode == "Mode":  # the default: the optimizer and linker flags decide
            return f"default (optimizer={cfg.optimizer}, linker={cfg.linker})"
        return cfg.mode

    def build(self, captured, mode_override, profile=None):
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

        _BUILD.stop = True
        maker_cls.create = create
        try:
            with self.without_traces():
                self.api.function(*args, mode=mode, **kwargs)
        except _StopBeforeLink as stop:
            built = Built(stop.maker, stop.args, stop.kwargs, mode, label, time.perf_counter() - t0)
            built.from_cli = mode_override is not None
            return built
        finally:
            _BUILD.stop = False
            maker_cls.create = original_create
        raise RuntimeError("the backend linked the function before scanprobe could stop it")

    def built_from_function(self, fn):
        """A ``Built`` for a function that was already compiled (e.g. inside a library)."""
        maker = fn.maker
        built = Built(maker, (), {}, maker.mode, "library mode", 0.0)
        built.function = fn
        return built

    # ------------------------------------------------------------------ graph fixes
    @staticmethod
    def _compiled_variables(captured):
        """(outputs as a list, how to put them back, update pairs) of a captured call."""
        args, kwargs = list(captured.args), dict(captured.kwargs)
        outputs = args[1] if len(args) > 1 else kwargs.get("outputs")
        updates = kwargs.get("updates") or []
        pairs = list(updates.items()) if hasattr(updates, "items") else list(updates)
        return outputs, pairs

    def graph_fixes(self, captured, rules=("SP003", "SP002")):
        """The graph rewrites (rewrites.Rewrite) that apply to a captured function's graph."""
        from scanprobe.backends import rewrites

        outputs, pairs = self._compiled_variables(captured)
        outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        variables = [getattr(o, "variable", o) for o in outs if o is not None] + [u for _, u in pairs]
        variables = [v for v in variables if isinstance(v, self.api.Variable)]
        found = []
        if "SP003" in rules:
            found += rewrites.per_example(self, variables)
        if "SP002" in rules:
            taken = {r.scan_node for r in found if r.form}
            found += rewrites.vectorize(self, variables, skip=taken)
        return found

    def fix_function(self, fn=None, inputs=None, outputs=None, kwargs=None):
        """A fixed compile of a function: (new function, rewrites, mode note).

        Either ``fn`` (a compiled function: Theano keeps its unoptimized graph in
        ``fn.maker``; PyTensor keeps only the optimized one, which the mode fix can still be
        applied to but which no longer shows the user's scans) or the arguments of ``function``.
        """
        from types import SimpleNamespace

        kwargs = dict(kwargs or {})
        if fn is not None:
            maker = fn.maker
            inputs = [i.variable for i in maker.inputs if not getattr(i, "implicit", False)]
            updates = [(i.variable, i.update) for i in maker.inputs if i.update is not None]
            outs = [o.variable for o in maker.outputs]
            fg = maker.fgraph
            if self.compiled_graph_is_optimized:
                # PyTensor: only the optimized graph is left; compile a copy of it (shared
                # variables' copies share their storage, so updates still reach the user's)
                fg2 = fg.clone()
                n = len(outs)
                inputs = [v for v, i in zip(fg2.inputs, maker.inputs) if not getattr(i, "implicit", False)]
                updates = [(fg2.inputs[k], fg2.outputs[o]) for o, k in sorted(fg.update_mapping.items())]
                outs = list(fg2.outputs[:n])  # (DeepCopyOp outputs: the original's copies)
                kwargs["accept_inplace"] = True
            outputs = outs[0] if getattr(fn, "unpack_single", False) and len(outs) == 1 else outs
            if getattr(fn, "return_none", False):
                outputs = []
            kwargs.setdefault("mode", maker.mode)
            if updates:
                kwargs["updates"] = updates
            kwargs.setdefault("on_unused_input", "ignore")
        cap = SimpleNamespace(args=(inputs, outputs), kwargs=kwargs)
        rewrites = self.graph_fixes(cap)
        applied = [r for r in rewrites if r.form]
        if applied:
            tmp = self.rewritten(_AsCaptured(cap.args, cap.kwargs), applied)
            cap = SimpleNamespace(args=tmp.args, kwargs=tmp.kwargs)
        mode, _ = self.resolve_mode(kwargs.get("mode"))
        notes = []
        if not self._save_mem_selected(getattr(mode, "_optimizer", None), "")[0]:
            mode = mode.including(self.save_mem_tag, "local_subtensor_of_alloc")
            notes.append(f"SP001: added {self.save_mem_tag} (and local_subtensor_of_alloc) to the mode")
        if fn is not None and self.compiled_graph_is_optimized:
            notes.append(
                f"{self.name} keeps only the optimized graph of a compiled function, where your scans may no "
                "longer be recognisable: for all graph fixes (SP002, SP003) pass function's arguments: "
                "scanprobe.fix(inputs, outputs, mode=...)"
            )
        kw = dict(cap.kwargs)
        kw["mode"] = mode
        new = self.api.function(*cap.args, **kw)
        return new, rewrites, notes

    def rewritten(self, captured, applied):
        """A copy of a captured call whose outputs and updates carry the applied rewrites."""
        import dataclasses

        from scanprobe.backends import rewrites

        outputs, pairs = self._compiled_variables(captured)
        single = not isinstance(outputs, (list, tuple))
        outs = [outputs] if single else list(outputs)
        plain = [o for o in outs if isinstance(o, self.api.Variable)]
        new = rewrites.apply(self.api, plain + [u for _, u in pairs], applied)
        it = iter(new[: len(plain)])
        new_outs = [next(it) if isinstance(o, self.api.Variable) else o for o in outs]
        new_updates = [(k, u) for (k, _), u in zip(pairs, new[len(plain) :])]
        args, kwargs = list(captured.args), dict(captured.kwargs)
        value = new_outs[0] if single else type(outputs)(new_outs) if isinstance(outputs, tuple) else new_outs
        if len(args) > 1:
            args[1] = value
        else:
            kwargs["outputs"] = value
        if pairs:
            kwargs["updates"] = new_updates
        return dataclasses.replace(captured, args=tuple(args), kwargs=kwargs, function=None, built=None)

    def realize(self, built):
        if built.function is None:
            fn = built.maker.create(*built.create_args, **built.create_kwargs)
            built.function = fn
        return built.function

    # ------------------------------------------------------------------ mode facts
    def mode_info(self, built) -> R.ModeInfo:
        mode = built.mode
        query = getattr(mode, "_optimizer", None)
        if query is None or isinstance(query, str):
            query = getattr(mode, "provided_optimizer", None)
        linker = getattr(mode, "provided_linker", None)
        linker_name = linker if isinstance(linker, str) else type(linker).__name__
        runs, reason = self._save_mem_selected(query, built.mode_label)
        return R.ModeInfo(
            name=built.mode_label,
            linker=str(linker_name),
            save_mem=runs,
            save_mem_reason=reason,
            save_mem_tag=self.save_mem_tag,
            from_cli=getattr(built, "from_cli", False),
        )

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
            objs = db.get(name)
            obj = next(iter(objs))
            tags = {t for t, members in db.items() if obj in members}
            hit = tags & exclude
            if hit:
                excluded_by.extend(sorted(hit))
                continue
            if (tags & include) and require <= tags:
                return True, ""
        if excluded_by:
            return False, (
                f"the save-mem rewrite is excluded by the mode ({', '.join(sorted(set(excluded_by)))})"
            )
        return False, (
            f"the mode {label} does not run the save-mem rewrite "
            f"({' and '.join(present) or 'it'} {'are' if len(present) > 1 else 'is'} in fast_run; the mode includes "
            f"{', '.join(sorted(include))})"
        )

    # ------------------------------------------------------------------ analysis
    def without_traces(self):
        """A context in which new graph nodes record no user stack trace.

        Every node a backend creates walks the Python stack to record where it was made; frames
        inside the backend are skipped without counting, so deep internal recursion (a scan's
        shape inference over a large inner graph) makes that walk quadratic. scanprobe reads sites
        from its own captures, never from these traces, so its own graph work runs without them.
        """
        return _TraceLimit(self.api.config)

    def analyse(self, built, captured, knowledge, session) -> R.Target:
        with self.without_traces():
            return self._analyse(built, captured, knowledge, session)

    def _analyse(self, built, captured, knowledge, session) -> R.Target:
        t0 = time.perf_counter()
        walker = GraphWalker(self, built.maker.fgraph, captured, knowledge, session)
        target = R.Target(
            name=captured.label,
            site=captured.site,
            mode=self.mode_info(built),
            inputs=walker.input_infos(),
            n_nodes=len(built.maker.fgraph.apply_nodes),
            compile_seconds=built.seconds,
        )
        target.scans = walker.scans()
        target.analysis_seconds = time.perf_counter() - t0
        built.buffer_vars = walker.buffer_vars
        return target

    # ------------------------------------------------------------------ pictures
    def picture(self, built, target, verdicts, max_inner=60) -> R.GraphPicture:
        """The optimized graph as plain records, buffers attached to the nodes that create them."""
        fg = built.maker.fgraph
        pic = R.GraphPicture(target=target.name)
        ids: dict[int, str] = {}

        def vid(var, cluster=""):
            key = id(var)
            if key not in ids:
                ids[key] = f"v{len(ids)}"
                if var.owner is None:
                    label = getattr(var, "name", None) or ("constant" if isinstance(var, self.api.Constant) else "input")
                    if isinstance(var, self.api.Constant) and np.asarray(var.data).size == 1:
                        label = str(np.asarray(var.data).item())
                    pic.nodes.append(R.GraphNode(ids[key], label, "input", cluster))
            return ids[key]

        def add_nodes(nodes, cluster, depth):
            for node in nodes:
                nid = f"n{len(pic.nodes)}"
                op = node.op
                kind = "scan" if isinstance(op, self.api.Scan) else (
                    "alloc" if isinstance(op, (self.api.Alloc, self.api.AllocEmpty)) else "op")
                pic.nodes.append(R.GraphNode(nid, str(op)[:60], kind, cluster))
                for inp in node.inputs:
                    src = ids.get(id(inp)) if inp.owner is not None else vid(inp, cluster)
                    if src:
                        pic.edges.append((src, nid))
                for out in node.outputs:
                    ids[id(out)] = nid
                if kind == "scan" and depth < 2:
                    info = self.scan_info(op)
                    inner = toposort(info["inner_outputs"])
                    pic.clusters[nid] = (None, info["name"] or "scan_fn")
                    add_nodes(inner[:max_inner], nid, depth + 1)
                node_ids[id(node)] = nid

        node_ids: dict[int, str] = {}
        add_nodes(list(fg.toposort()), "", 0)
        verdict_of = {(v.buffer.scan_id, v.buffer.role, v.buffer.index): v for v in verdicts}
        buffer_vars = getattr(built, "buffer_vars", {})
        for scan in target.scans:
            for b in scan.buffers:
                var = buffer_vars.get((b.scan_id, b.role, b.index))
                if var is None or b.role == "nit_sot":
                    continue
                _, creator = _creator(self.api, var)
                nid = node_ids.get(id(creator)) if creator is not None else None
                if nid:
                    v = verdict_of.get((b.scan_id, b.role, b.index))
                    pic.buffers[nid] = (b.belongs_to, b.bytes, v.verdict if v else "", b.shape_formula(), b.dtype)
        return pic

    # ------------------------------------------------------------------ per-backend lookups
    @abstractmethod
    def scan_info(self, op):
        """Dict with tap lists per role, name, as_while, truncate_gradient, inner io."""

    @abstractmethod
    def scan_roles(self, node):
        """An object with outer_in_* / outer_out_* lists (the backend's ScanArgs)."""

    @abstractmethod
    def subtensor_indices(self, node):
        """The index entries of a Subtensor node (ints, variables, slices of them)."""

    def infer_shape(self, node, shapes):
        """The op's own shape inference (signatures differ between backends)."""
        return node.op.infer_shape(self.api.fgraph_for_infer_shape, node, shapes)

    def clients_of_outputs(self, fgraph):
        return list(fgraph.outputs)


# ====================================================================== graph walking


def _op_name(op) -> str:
    scalar = getattr(op, "scalar_op", None)
    if scalar is not None:
        return type(scalar).__name__
    return type(op).__name__


class GraphWalker:
    """Walks one optimized function graph (and the inner graphs of its scans) into records.

    Sizes are computed without running the function: the shapes of every buffer come from the
    backend's own shape inference (``ShapeFeature``) on a clone of the optimized graph, and the
    scalar graphs that give them are evaluated with a Python linker, only when they read nothing
    but constants, shared values, given values and the *shapes* of given inputs. A size that would
    need more (a value computed by a scan, data the user did not give) stays a formula.
    """

    def __init__(self, backend: FamilyBackend, fgraph, captured, knowledge, session):
        self.b = backend
        self.api = backend.api
        self.captured = captured
        self.session = session
        self.fg = self._clone_with_shapes(fgraph)
        self.orig_inputs = list(fgraph.inputs)
        # knowledge: input index -> (value or None, shape or None, source)
        self.known = {}
        for i, var in enumerate(self.fg.inputs):
            self.known[var] = knowledge.get(i, (None, None, "unknown"))
        self.labels = {var: captured.input_label(i, var) for i, var in enumerate(self.fg.inputs)}
        self._next_id = 0
        self._scans: list[R.Scan] = []
        self._skey_memo: dict[int, Any] = {}
        self._skey_intern: dict[tuple, int] = {}

    # -------------------------------------------------------------- setup
    def _clone_with_shapes(self, fgraph):
        fg, equiv = fgraph.clone_get_equiv(check_integrity=False, attach_feature=False)
        fg.attach_feature(self.api.ShapeFeature())
        #: clone variable -> the function's own variable (to match profiler records)
        self.original_of = {new: old for old, new in equiv.items()}
        #: (scan id, role, index) -> the function's variable holding that buffer (top level)
        self.buffer_vars = {}
        return fg

    def input_infos(self) -> list[R.InputInfo]:
        out = []
        for var in self.fg.inputs:
            value, shape, source = self.known[var]
            if value is not None:
                shape = list(np.shape(value))
            out.append(
                R.InputInfo(
                    label=self.labels[var],
                    type=_type_str(var),
                    shape=list(shape) if shape is not None else None,
                    source=source,
                )
            )
        return out

    # -------------------------------------------------------------- scans
    def scans(self) -> list[R.Scan]:
        level = _Level(self, self.fg, self.known, parent=None)
        level.walk()
        return self._scans

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    # -------------------------------------------------------------- names
    def label_of(self, var, level) -> str:
        """A name for a graph input in the user's terms."""
        if level is not None and level.labels.get(var):
            return level.labels[var]
        if self.labels.get(var):
            return self.labels[var]
        name = self.session.name_for_variable(var)
        if name:
            return name
        if getattr(var, "name", None):
            return var.name
        return f"<{_type_str(var)}>"


def _type_str(var) -> str:
    t = var.type
    dtype = getattr(t, "dtype", "?")
    ndim = getattr(t, "ndim", None)
    return f"{dtype}, {ndim}D" if ndim is not None else str(t)


class _Level:
    """One graph (the function's, or a scan's inner graph) with what is known about its inputs."""

    def __init__(self, walker: GraphWalker, fg, known, parent, labels=None):
        self.labels = labels or {}
        self.w = walker
        self.api = walker.api
        self.fg = fg
        self.known = known
        self.parent = parent
        self.shape_of = fg.shape_feature.shape_of
        self.clients: dict[Any, list] = {}
        self.nodes = list(fg.toposort())
        for node in self.nodes:
            for i, inp in enumerate(node.inputs):
                self.clients.setdefault(inp, []).append((node, i))
        for i, out in enumerate(fg.outputs):
            self.clients.setdefault(out, []).append(("output", i))
        self._values: dict[Any, Any] = {}
        self._pending: list = []

    # -------------------------------------------------------------- evaluation
    def shape(self, var):
        """Symbolic shape of a variable of this graph (empty for non-tensor types)."""
        if getattr(var.type, "ndim", None) is None:
            return ()
        shp = self.shape_of.get(var)
        if shp is None:
            return tuple(self.api.T.shape(var)[i] for i in range(var.type.ndim))
        return tuple(shp)

    def request(self, var):
        """Ask for a scalar's value; ``evaluate_pending`` computes all requests at once."""
        if var is None or _is_constant(self.api, var):
            return
        if var not in self._values and var not in self._pending:
            self._pending.append(var)

    def value(self, var):
        if var is None:
            return None
        if _is_constant(self.api, var):
            return _as_int(var.data)
        return self._values.get(var)

    def evaluate_pending(self):
        """Evaluate every requested scalar that can be, in one Python-linker function."""
        todo, self._pending = self._pending, []
        for var in todo:
            self._values.setdefault(var, None)
        self._values.update({k: v for k, v in self._evaluate(todo, self.known).items() if v is not None})

    #: Sizes given to inputs of unknown shape when probing (primes, so no accidental equality).
    PROBES = (1009, 1511)

    def probe(self, vars_):
        """Values of ``vars_`` under two made-up sizes for every input of unknown shape.

        Used only to recognise a leading dimension of n_steps + k when the real sizes are not
        given: if lead - n_steps is the same k under both probes while n_steps changes, the
        buffer holds one row per step whatever the inputs. No figure from a probe is reported.
        """
        results = []
        for size in self.PROBES:
            known = dict(self.known)
            for var in list(self.known) + list(self.fg.inputs):
                value, shape, source = known.get(var, (None, None, "unknown"))
                if value is None and shape is None:
                    ndim = getattr(var.type, "ndim", None)
                    if ndim == 0:
                        known[var] = (np.asarray(size, dtype=var.type.dtype), (), "probe")
                    elif ndim:
                        known[var] = (None, (size,) * ndim, "probe")
            results.append(self._evaluate(list(vars_), known))
        return results

    def _evaluate(self, todo, known):
        ok, feeds, originals = [], {}, []
        for var in todo:
            if _is_constant(self.api, var):
                continue
            resolved = self._resolve_shapes(var)
            inputs = self._evaluable(resolved, known)
            if inputs is None:
                continue
            ok.append(resolved)
            originals.append(var)
            feeds.update(inputs)
        out = {v: self.value(v) if _is_constant(self.api, v) else None for v in todo}
        if not ok:
            return out
        api = self.api
        free = [v for v in feeds if not isinstance(v, api.SharedVariable)]
        try:
            fn = api.function(
                free,
                ok,
                mode=api.Mode(linker="py", optimizer=None),
                accept_inplace=True,
                on_unused_input="ignore",
            )
            results = fn(*[feeds[v] for v in free])
        except Exception:  # an op without a Python implementation, or a failed check
            return out
        for var, res in zip(originals, results):
            out[var] = _as_int(res)
        return out

    def _infer_shape(self, var, depth=0):
        """Symbolic shape of ``var``: the fgraph's ShapeFeature, else the op's infer_shape.

        Shape graphs built by infer_shape contain variables that are not in the fgraph (e.g.
        ``Shape(x[0:])``); their shapes come from their ops' infer_shape, recursively.
        """
        if var in self.shape_of:
            return tuple(self.shape_of[var])
        node = var.owner
        if node is None or depth > 8 or not hasattr(node.op, "infer_shape"):
            return None
        shapes = []
        for inp in node.inputs:
            if getattr(inp.type, "ndim", None) is None:
                shapes.append(None)
                continue
            shp = self._infer_shape(inp, depth + 1)
            if shp is None:
                if inp.owner is not None:
                    return None
                shp = tuple(self.api.T.shape(inp)[i] for i in range(inp.type.ndim))
            shapes.append(shp)
        try:
            out = self.w.b.infer_shape(node, shapes)
        except Exception:  # an op whose infer_shape needs more than we give it
            return None
        return tuple(out[node.outputs.index(var)])

    def _resolve_shapes(self, var, rounds=6):
        """Replace Shape/Shape_i of computed variables by their inferred shapes.

        ``Shape_i{0}(scan_output)`` would run the scan; the backend's shape inference knows it
        is the scan's n_steps (or whatever its infer_shape says) without running anything.
        """
        api = self.api
        for _ in range(rounds):
            replace = {}
            for node in _ancestor_nodes([var]):
                if not isinstance(node.op, (api.Shape, api.Shape_i)):
                    continue
                src = node.inputs[0]
                if src.owner is None:
                    continue
                shp = self._infer_shape(src)
                if shp is None:
                    continue
                if isinstance(node.op, api.Shape_i):
                    new = shp[node.op.i]
                elif getattr(src.type, "ndim", 0) > 0:
                    new = api.T.stack([api.T.cast(d, "int64") for d in shp])
                else:
                    continue
                if new is not node.outputs[0] and not any(v is node.outputs[0] for v in ancestors([new])):
                    replace[node.outputs[0]] = api.T.cast(new, node.outputs[0].type.dtype)
            if not replace:
                return var
            var = api.clone_replace(var, replace=replace)
        return var

    def _evaluable(self, var, known):
        """The inputs to feed to compute ``var``, or None when computing it is not safe.

        Safe means: no Scan and no array of two or more dimensions is computed, and every
        input whose value is unknown is only read through Shape/Shape_i (so a zero-strided
        stand-in of the right shape gives the exact answer without allocating).
        """
        api = self.api
        feeds = {}
        seen = set()
        stack = [var]
        while stack:
            v = stack.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if _is_constant(api, v):
                continue
            node = v.owner
            if node is None:
                if isinstance(v, api.SharedVariable):
                    feeds[v] = None
                    continue
                value, shape, _ = known.get(v, (None, None, ""))
                if value is not None:
                    feeds[v] = value
                    continue
                if shape is None:
                    return None
                feeds[v] = ("shape-only", shape)
                continue
            if isinstance(node.op, api.Scan) or type(node.op).__name__ not in _SHAPE_ARITHMETIC:
                return None  # never run the model's own ops (or anything costly) to size it
            for out in node.outputs:
                if getattr(out.type, "ndim", 0) >= 2:
                    return None
            is_shape = isinstance(node.op, (api.Shape, api.Shape_i))
            for inp in node.inputs:
                if not is_shape or inp.owner is not None:
                    stack.append(inp)
                    if inp.owner is None and not _is_constant(api, inp):
                        val = known.get(inp, (None, None, ""))[0]
                        if not isinstance(inp, api.SharedVariable) and val is None:
                            return None  # data of an input we only know the shape of
                elif inp.owner is None and not _is_constant(api, inp):
                    stack.append(inp)
        for v, fed in list(feeds.items()):
            if isinstance(fed, tuple) and fed and fed[0] == "shape-only":
                dtype = v.type.dtype
                feeds[v] = np.broadcast_to(np.zeros((), dtype=dtype), tuple(fed[1]))
        return feeds

    # -------------------------------------------------------------- formulas
    def formula(self, var, names=None, depth=0) -> str:
        """A readable expression for a scalar graph (used where a size stays symbolic)."""
        api = self.api
        names = names or {}
        if var is None:
            return "?"
        key = self.skey(var)
        if key in names:
            return names[key]
        if _is_constant(api, var):
            return str(_as_int(var.data))
        val = self._values.get(var)
        if val is not None and depth > 0:
            return str(val)
        node = var.owner
        if node is None:
            return self.w.label_of(var, self)
        if type(node.op).__name__ == "DimShuffle" and node.inputs[0].owner is None:
            return self.w.label_of(node.inputs[0], self)  # broadcast/dropped axes of an input
        if depth > 6:
            return "..."
        op = node.op
        name = _op_name(op)
        if isinstance(op, api.Shape_i):
            return f"{self.formula(node.inputs[0], names, depth + 1)}.shape[{op.i}]"
        if name in ("Cast", "ScalarFromTensor", "TensorFromScalar", "Identity") or type(op).__name__ in (
            "ScalarFromTensor",
            "TensorFromScalar",
        ):
            return self.formula(node.inputs[0], names, depth)
        if isinstance(op, api.Subtensor) and node.inputs[0].owner is not None and isinstance(
            node.inputs[0].owner.op, api.Shape
        ):
            idx = self.w.b.subtensor_indices(node)
            if len(idx) == 1 and not isinstance(idx[0], slice):
                i = idx[0] if isinstance(idx[0], int) else self.value(idx[0])
                base = self.formula(node.inputs[0].owner.inputs[0], names, depth + 1)
                return f"{base}.shape[{i if i is not None else '?'}]"
        infix = {"Add": "+", "Sub": "-", "Mul": "*", "IntDiv": "//", "TrueDiv": "/"}
        if name in infix:
            parts = [self.formula(i, names, depth + 1) for i in node.inputs]
            return "(" + f" {infix[name]} ".join(parts) + ")"
        if name in ("Maximum", "Minimum", "Switch", "Ceil", "Floor"):
            parts = [self.formula(i, names, depth + 1) for i in node.inputs]
            return f"{name.lower()}({', '.join(parts)})"
        if name == "Composite":  # fused scalar arithmetic: show its expression
            import re

            parts = [self.formula(i, names, depth + 1) for i in node.inputs]
            text = str(op.scalar_op)
            text = text[text.index("{") + 1 : -1] if "{" in text else text
            return re.sub(r"\bi(\d+)\b", lambda m: parts[int(m.group(1))] if int(m.group(1)) < len(parts) else m.group(0), text)
        return f"{type(op).__name__}(...)"

    def skey(self, var):
        """A structural key: equal keys mean the same value, whatever the variables' identity.

        Keys are hash-consed to small ints (shape graphs share sub-graphs: hashing nested tuples
        would expand them into trees, exponential for nested scans over long chains), and
        computed without recursion (graphs thousands of ops deep).
        """
        memo = self.w._skey_memo
        k = memo.get(id(var))
        if k is not None:
            return k
        api, intern = self.api, self.w._skey_intern
        stack = [var]
        while stack:
            v = stack[-1]
            if id(v) in memo:
                stack.pop()
                continue
            if _is_constant(api, v):
                k = ("c", str(np.asarray(v.data).tolist()))
            elif v.owner is None:
                k = ("v", id(v))
            else:
                node = v.owner
                name = _op_name(node.op)
                through = name in ("Cast", "Identity") or type(node.op).__name__ in ("ScalarFromTensor", "TensorFromScalar")
                deps = node.inputs[:1] if through else node.inputs
                missing = [i for i in deps if id(i) not in memo]
                if missing:
                    stack.extend(missing)
                    continue
                if through:
                    memo[id(v)] = memo[id(node.inputs[0])]
                    stack.pop()
                    continue
                k = (str(node.op), node.outputs.index(v), tuple(memo[id(i)] for i in node.inputs))
            memo[id(v)] = intern.setdefault(k, len(intern))
            stack.pop()
        return memo[id(var)]

    def split_offset(self, var):
        """(structural key of base, constant k) such that var == base + k."""
        api = self.api
        k = 0
        while var is not None and var.owner is not None:
            node = var.owner
            name = _op_name(node.op)
            if name in ("Cast", "Identity") or type(node.op).__name__ in ("ScalarFromTensor", "TensorFromScalar"):
                var = node.inputs[0]
                continue
            if name in ("Add", "Sub") and len(node.inputs) == 2:
                a, b = node.inputs
                if _is_constant(api, b):
                    k += _as_int(b.data) * (1 if name == "Add" else -1)
                    var = a
                    continue
                if name == "Add" and _is_constant(api, a):
                    k += _as_int(a.data)
                    var = b
                    continue
            break
        if var is not None and _is_constant(api, var):
            return ("c", 0), k + _as_int(var.data)
        return self.skey(var), k

    # -------------------------------------------------------------- walk
    def walk(self):
        api = self.api
        scan_nodes = [n for n in self.nodes if isinstance(n.op, api.Scan)]
        if not scan_nodes:
            return
        plans = [_ScanPlan(self, node) for node in scan_nodes]
        for p in plans:
            p.request()
        self.evaluate_pending()
        for p in plans:
            p.finish(plans)
        for p in plans:
            p.walk_inner()


#: Ops that may be evaluated to size a buffer: shape arithmetic on scalars and shape vectors,
#: and reductions of known (shared or given) vectors. Anything else keeps the size symbolic.
_SHAPE_ARITHMETIC = frozenset(
    {
        "Shape", "Shape_i", "MakeVector", "Elemwise", "ScalarFromTensor", "TensorFromScalar",
        "Subtensor", "DimShuffle", "Join", "Assert", "CheckAndRaise", "SpecifyShape",
        "Rebroadcast", "Unbroadcast", "Sum", "Prod", "Max", "Min", "All", "Any", "CAReduce",
        "ScalarOp", "Composite", "Second",
    }
)


def _ancestor_nodes(outputs):
    seen, stack, nodes = set(), list(outputs), []
    while stack:
        v = stack.pop()
        if v.owner is None or id(v.owner) in seen:
            continue
        seen.add(id(v.owner))
        nodes.append(v.owner)
        stack.extend(v.owner.inputs)
    return nodes


def _is_constant(api, var) -> bool:
    return isinstance(var, api.Constant)


def _as_int(x):
    try:
        arr = np.asarray(x)
        if arr.ndim == 0:
            v = arr.item()
            if isinstance(v, float) and v.is_integer():
                return int(v)
            return v
        return arr
    except Exception:  # pragma: no cover - exotic constants
        return None


_ROLES = ("mit_mot", "mit_sot", "sit_sot", "nit_sot", "shared")


class _ScanPlan:
    """Collects what one Scan node needs evaluated, then turns it into records."""

    def __init__(self, level: _Level, node):
        self.level = level
        self.w = level.w
        self.api = level.api
        self.node = node
        self.op = node.op
        self.info = self.w.b.scan_info(self.op)
        self.args = self.w.b.scan_roles(node)
        self.id = self.w.new_id()
        self.n_steps = node.inputs[0]
        self.buffers = []  # (role, index, outer_in, outer_out, dims_vars)
        self.index_vars = []

    def request(self):
        lv = self.level
        lv.request(self.n_steps)
        a = self.args
        for role in _ROLES:
            ins = getattr(a, f"outer_in_{role}")
            outs = getattr(a, f"outer_out_{role}")
            if role == "shared":  # untraced states (PyTensor) / shared updates (Theano)
                role = "untraced"
            for i, outer_in in enumerate(ins):
                outer_out = outs[i] if i < len(outs) else None
                if getattr(outer_in.type, "dtype", None) is None and role != "nit_sot":
                    continue  # a random generator or other non-tensor state: no buffer
                if role == "nit_sot":
                    rest = lv.shape(outer_out)[1:] if outer_out is not None else ()
                    dims = (outer_in,) + tuple(rest)
                else:
                    dims = lv.shape(outer_in)
                    _, creator = _creator(self.api, outer_in)
                    for x in creator.inputs if creator is not None else ():
                        if getattr(x.type, "ndim", None) == 0:
                            lv.request(x)
                for d in dims:
                    lv.request(d)
                self.buffers.append((role, i, outer_in, outer_out, dims))
        # outer sequences and non-sequences: shapes and values known here help nested scans
        for v in list(a.outer_in_seqs) + list(a.outer_in_non_seqs):
            if getattr(v.type, "ndim", None) is not None:
                for d in lv.shape(v):
                    lv.request(d)
                if v.type.ndim == 0:
                    lv.request(v)
        # indices used by readers of each output
        for role, i, outer_in, outer_out, dims in self.buffers:
            if outer_out is not None:
                for var in _reader_index_vars(self, outer_out):
                    lv.request(var)
        self.step = _StepFacts(self)
        for item in self.step.writes:
            if item["dim"] is not None:
                lv.request(item["dim"])

    def finish(self, plans):
        lv = self.level
        w = self.w
        info = self.info
        n_val = lv.value(self.n_steps)
        site = self._scan_site()
        call = w.session.scan_call_at(site)
        rec = R.Scan(
            id=self.id,
            name=info["name"] or "scan_fn",
            op=str(self.op),
            n_steps=R.Dim(n_val if isinstance(n_val, int) else None, lv.formula(self.n_steps)),
            as_while=bool(info["as_while"]),
            is_gradient=any(p.startswith("grad_of_") for p in (info["name"] or "").split("&")),
            truncate_gradient=int(info.get("truncate_gradient", -1) or -1),
            parent=lv.parent,
            site=site,
            step_function=getattr(call, "step_name", "") if call else "",
        )
        rec.inputs = self._outer_inputs(call)
        self.step.fill(rec, n_val)
        nsteps_keys = [(p, lv.split_offset(p.n_steps)) for p in plans]
        for role, i, outer_in, outer_out, dims in self.buffers:
            rec.buffers.append(self._buffer(rec, role, i, outer_in, outer_out, dims, nsteps_keys, call))
        self.record = rec
        w._scans.append(rec)
        if lv.parent is None:
            for role, i, outer_in, outer_out, dims in self.buffers:
                var = outer_out if role == "nit_sot" else outer_in
                w.buffer_vars[(rec.id, role, i)] = w.original_of.get(var, var)

    # ---------------------------------------------------------------- details
    def _scan_site(self):
        for out in self.node.outputs:
            site = self.w.session.user_site_from_trace(out)
            if site is not None:
                return site
        # merged scans lose their trace: fall back to the user's scan call with that name
        parts = [p for p in (self.info["name"] or "scan_fn").split("&") if not p.startswith("grad_of_")]
        calls = self.w.session.scan_calls
        for part in parts or [(self.info["name"] or "scan_fn").split("&")[0][len("grad_of_"):]]:
            hits = [c for c in calls if (c.name or "scan_fn") == part]
            if hits and len({(h.site.file, h.site.line) for h in hits}) == 1:
                return hits[0].site
        return None

    def _outer_inputs(self, call):
        a, lv = self.args, self.level
        out = [R.OuterInput("n_steps", 0, lv.formula(self.n_steps), "int")]
        names = {
            "sequence": a.outer_in_seqs,
            "mit_mot": a.outer_in_mit_mot,
            "mit_sot": a.outer_in_mit_sot,
            "sit_sot": a.outer_in_sit_sot,
            "untraced": a.outer_in_shared,
            "nit_sot": a.outer_in_nit_sot,
            "non_sequence": a.outer_in_non_seqs,
        }
        for role, vars_ in names.items():
            for i, v in enumerate(vars_):
                label = self._user_label(v, role, i, call)
                out.append(R.OuterInput(role, i, label, _type_str(v)))
        return out

    def _user_label(self, v, role, i, call) -> str:
        lv = self.level
        if role == "non_sequence" and call is not None:
            name = call.non_sequence_name(self.w.session, v, i, len(self.args.outer_in_non_seqs))
            if name:
                return name
        if role in ("mit_mot", "mit_sot", "sit_sot"):
            return "(buffer, below)"
        root = _strip_to_root(self.api, v, through_subtensor=role == "sequence")
        if root is not None and root.owner is None and not _is_constant(self.api, root):
            return self.w.label_of(root, lv)
        if getattr(v, "name", None):
            return v.name
        return lv.formula(v) if getattr(v.type, "ndim", 1) == 0 else f"<{_type_str(v)}>"

    def _buffer(self, rec, role, i, outer_in, outer_out, dims, nsteps_keys, call):
        lv = self.level
        info = self.info
        dtype = str(outer_in.type.dtype) if role != "nit_sot" else str(outer_out.type.dtype)
        itemsize = np.dtype(dtype).itemsize
        n_key = lv.split_offset(self.n_steps)
        names = {}
        if n_key[1] == 0:
            names[n_key[0]] = "n_steps"
        rdims = []
        for j, d in enumerate(dims):
            val = lv.value(d)
            formula = lv.formula(d, names)
            if j == 0 and val is None:
                base, k = lv.split_offset(d)
                if base == n_key[0]:
                    off = k - n_key[1]
                    formula = "n_steps" if off == 0 else f"(n_steps{off:+d})"
            rdims.append(R.Dim(val if isinstance(val, int) else None, formula))
        if role == "untraced":  # the state itself, no time axis: nothing to shrink
            _, creator = _creator(self.api, outer_in)
            belongs = f"untraced state #{i} (no history kept)"
            var = _shape_source(self.api, creator, leading=False)
            if rec.is_gradient and var is not None:
                display, _ = self._name_of_forward_input(var)
                belongs = f"gradient accumulator of non_sequence {display}, untraced (no history kept)"
            return R.Buffer(
                scan_id=rec.id, role=role, index=i, dtype=dtype, itemsize=itemsize, dims=rdims,
                needed_rows=0, belongs_to=belongs,
                created_by=type(outer_in.owner.op).__name__ if outer_in.owner else "graph input",
            )
        taps = list(info["taps"].get(role, [[]] * (i + 1))[i]) if role != "nit_sot" else [0]
        span = max([-t for t in taps if t < 0] + [0]) if role != "mit_mot" else max(
            [abs(t) for t in taps] + [1]
        )
        buf = R.Buffer(
            scan_id=rec.id,
            role=role,
            index=i,
            dtype=dtype,
            itemsize=itemsize,
            dims=rdims,
            taps=[int(t) for t in taps],
            needed_rows=max(span, 1) + (0 if role == "nit_sot" else 1),
        )
        # leading dimension relative to a scan's n_steps
        lead = dims[0] if dims else None
        if lead is not None:
            lead_val = lv.value(lead)
            base, k = lv.split_offset(lead)
            candidates = [(p, key) for p, key in nsteps_keys if p is self] + [
                (p, key) for p, key in nsteps_keys if p is not self
            ]
            own = lv.value(self.n_steps)
            matches = []
            for p, (nbase, nk) in candidates:
                pval = lv.value(p.n_steps)
                if isinstance(lead_val, int) and isinstance(pval, int):
                    # Own length: any buffer with at least one row per step keeps the history.
                    # Another scan's length (a gradient scan under truncate_gradient sized by
                    # the forward scan): close to it, and longer than this scan runs.
                    off = lead_val - pval
                    if (p is self and off >= 0) or (
                        p is not self and 0 <= off <= buf.needed_rows and isinstance(own, int) and lead_val > own
                    ):
                        matches.append((off, p))
                elif nbase == base and nbase != ("c", 0):
                    matches.append((k - nk, p))
            if not matches and lead_val is None:
                matches = self._probe_matches(lead, buf)
            if matches:
                off, p = min(matches, key=lambda m: (m[0] < 0, abs(m[0]), m[1] is not self))
                buf.leading_offset = off
                buf.length_of = p.info["name"] or "scan_fn"
                if lead_val is None and p is self:  # say it simply: it equals n_steps + k
                    rdims[0].formula = "n_steps" if off == 0 else f"(n_steps{off:+d})"
        # provenance
        created, creator = _creator(self.api, outer_in) if role != "nit_sot" else (None, None)
        if role == "nit_sot":
            buf.created_by = f"allocated inside the Scan's perform (length {rdims[0].value if rdims[0].value is not None else rdims[0].formula})"
        elif creator is not None:
            buf.created_by = f"{type(creator.op).__name__}({', '.join(_short_input(lv, x) for x in creator.inputs)})"
        else:
            buf.created_by = type(outer_in.owner.op).__name__ if outer_in.owner else "graph input"
        site = None
        for var in ([created] if created is not None else []) + [outer_in, outer_out]:
            if var is not None:
                site = self.w.session.user_site_from_trace(var)
                if site:
                    break
        buf.created_site = site or rec.site
        buf.belongs_to, buf.variable = self._belongs_to(rec, role, i, creator, call)
        if outer_out is not None:
            buf.reads = _reads(self, outer_out, buf)
        return buf

    def _probe_matches(self, lead, buf):
        """(k, scan) pairs for which lead == n_steps + k under two made-up input sizes."""
        lv = self.level
        own = [self.n_steps]
        (a, b) = lv.probe([lead] + own)
        la, lb, na, nb = a.get(lead), b.get(lead), a.get(self.n_steps), b.get(self.n_steps)
        if not all(isinstance(x, int) for x in (la, lb, na, nb)) or na == nb:
            return []
        if la - na == lb - nb and la - na >= 0:
            return [(la - na, self)]
        return []

    def _belongs_to(self, rec, role, i, creator, call):
        lv = self.level
        if rec.is_gradient and role == "sit_sot":
            var = _shape_source(self.api, creator) if creator is not None else None
            non_seqs = self.args.outer_in_non_seqs
            if var is None or not any(self.w.session.same_variable(var, ns) or var is ns for ns in non_seqs):
                var = self._non_seq_shaped_like(outer_in_dims=getattr(self, "_dims_values", None), role=role, i=i)
            if var is not None:
                display, name = self._name_of_forward_input(var)
                return f"gradient accumulator of non_sequence {display}", name
            if "&" not in rec.name:
                return f"gradient accumulator #{i} of {rec.name[len('grad_of_'):]}", ""
        if rec.is_gradient and "&" not in rec.name:
            if role == "mit_mot":
                return f"backward-pass gradient of recurrent state #{i}", ""
            if role == "nit_sot":
                return f"gradient w.r.t. sequence #{i}", ""
        if role in ("sit_sot", "mit_sot"):
            name = call.state_name(role, i, self.args) if call is not None else ""
            init = None
            outer_in = getattr(self.args, f"outer_in_{role}")[i]
            if outer_in.owner is not None and isinstance(outer_in.owner.op, self.api.IncSubtensor):
                init = _strip_to_root(self.api, outer_in.owner.inputs[1])
            if not name and init is not None and init.owner is None and not _is_constant(self.api, init):
                name = self.w.label_of(init, lv)
            return (f"recurrent state `{name}`" if name else f"recurrent state #{i}"), name
        if role == "mit_mot":
            return f"multi-tap state #{i}", ""
        return f"per-step output #{i}", ""

    def _non_seq_shaped_like(self, outer_in_dims, role, i):
        """The one non_sequence whose (known) shape and dtype match a gradient buffer's rows.

        Used when the buffer's shape no longer points at its variable (shapes constant-folded);
        when two non_sequences have the same shape the answer stays unknown rather than guessed.
        """
        lv = self.level
        outer_in = getattr(self.args, f"outer_in_{role}")[i]
        dims = [lv.value(d) for d in lv.shape(outer_in)]
        rows = dims[1:] if role != "untraced" else dims
        def matching(candidates):
            hits = []
            for ns in candidates:
                if getattr(ns.type, "dtype", None) != outer_in.type.dtype:
                    continue
                shp = [lv.value(d) for d in lv.shape(ns)]
                root = _strip_to_root(self.api, ns)
                if root.owner is not None or _is_constant(self.api, root):
                    continue
                if all(isinstance(x, int) for x in shp) and shp == rows and root not in hits:
                    hits.append(root)
            return hits

        hits = matching(self.args.outer_in_non_seqs)
        if not hits and lv.parent is None:
            # the rewrites may have dropped the non_sequence from the backward scan (only its
            # shape was used): look among the function's inputs and shared variables
            inputs = [v for v in lv.fg.inputs if getattr(v.type, "ndim", None) == len(rows)]
            for v in inputs:
                for d in lv.shape(v):
                    lv.request(d)
            lv.evaluate_pending()
            hits = matching(inputs)
        if len(hits) == 1 and hits[0].owner is None:
            return hits[0]
        return None

    def _name_of_forward_input(self, var):
        """(display, name) of a graph input that a scan step receives as a non_sequence.

        The step function's parameter name is what the user reads in the step's code; the
        module-level name is added when it differs (``input`` (``images``)).
        """
        label = self.w.label_of(var, self.level)
        for call in self.w.session.scan_calls:
            name = call.name_of_non_sequence(self.w.session, var)
            if name:
                if name == label or label.startswith("<"):
                    return f"`{name}`", name
                return f"`{name}` (`{label}`)", name
        return f"`{label}`", label

    # ---------------------------------------------------------------- nesting
    def walk_inner(self):
        """Analyse scans nested in this scan's inner graph, with what the outer level knows."""
        api = self.api
        inner_in, inner_out = self.info["inner_inputs"], self.info["inner_outputs"]
        if not any(
            n.owner is not None and isinstance(n.owner.op, api.Scan)
            for n in ancestors(inner_out)
        ):
            return
        fg = api.FunctionGraph(list(inner_in), list(inner_out), clone=True)
        fg.attach_feature(api.ShapeFeature())
        known = {}
        lv = self.level
        a = self.args
        # Map inner inputs to what we know of the outer ones, by position: inner inputs are
        # sequences first (one per outer sequence slice) and non_sequences last, in the same
        # order as the outer ones. (Theano's scan_args clones the inner graph, so identity
        # cannot be used.)
        n_ns = len(a.outer_in_non_seqs)
        seq_pairs = list(zip(a.outer_in_seqs, inner_in[: len(a.outer_in_seqs)]))
        ns_pairs = list(zip(a.outer_in_non_seqs, inner_in[len(inner_in) - n_ns :] if n_ns else []))
        for outer, inner in ns_pairs:
            known[inner] = _known_from_outer(lv, outer, drop_first=False)
        for outer, inner in seq_pairs:
            known[inner] = _known_from_outer(lv, outer, drop_first=True)
        labels = {}
        for outer, inner in ns_pairs:
            labels[inner] = self._user_label(outer, "non_sequence", 0, None)
        for outer, inner in seq_pairs:
            labels[inner] = f"{self._user_label(outer, 'sequence', 0, None)}[t]"
        fg_known, fg_labels = {}, {}
        for orig, new in zip(inner_in, fg.inputs):
            fg_known[new] = known.get(orig, (None, None, "unknown"))
            if orig in labels:
                fg_labels[new] = labels[orig]
        sub = _Level(self.w, fg, fg_known, parent=self.id, labels=fg_labels)
        sub.walk()


def _flat(items) -> list:
    out = []
    for x in items:
        out.extend(_flat(x) if isinstance(x, (list, tuple)) else [x])
    return out


class _StepFacts:
    """What a scan's step does with the step: state it carries, whole-batch work, blockers.

    ``varying``: inner variables that change from step to step (sequences' slices, states, and
    everything computed from them). A node that writes a varying index into a loop-invariant
    tensor (IncSubtensor and kin) is SP003's evidence; its target's leading dimension is traced
    back to an outer input and compared with n_steps. Nodes whose output shape depends on
    varying values (slice bounds, ARange, Alloc, Reshape, a nested scan's length) block SP002.
    """

    def __init__(self, plan: "_ScanPlan"):
        self.plan = plan
        api, a = plan.api, plan.args
        self.api = api
        states = []
        for role in ("mit_mot", "mit_sot", "sit_sot", "shared"):
            states += _flat(getattr(a, f"inner_in_{role}", []) or [])
        self.recurrent = bool(states)
        inner_out = []
        for role in ("mit_mot", "mit_sot", "sit_sot", "nit_sot", "shared"):
            inner_out += _flat(getattr(a, f"inner_out_{role}", []) or [])
        cond = getattr(a, "cond", None)
        if cond:
            inner_out += _flat(cond if isinstance(cond, (list, tuple)) else [cond])
        self.nodes = toposort(inner_out)
        varying = {id(v) for v in _flat(a.inner_in_seqs) + states}
        for node in self.nodes:
            if any(id(i) in varying for i in node.inputs):
                varying.update(id(o) for o in node.outputs)
        self.varying = varying
        self.non_seq_outer = {id(i): o for i, o in zip(a.inner_in_non_seqs, a.outer_in_non_seqs)}
        self.writes = []
        self.blockers = []
        self.opaque = []
        for node in self.nodes:
            name = type(node.op).__name__
            if "IncSubtensor" in name and id(node.inputs[0]) not in varying and any(
                id(i) in varying for i in node.inputs[2:]
            ):
                src = self._leading_source(node.inputs[0])
                outer = self.non_seq_outer.get(id(src)) if src is not None else None
                dim = plan.level.shape(outer)[0] if outer is not None and getattr(outer.type, "ndim", 0) else None
                self.writes.append({"node": node, "outer": outer, "dim": dim})
            reason = self._blocks(node)
            if reason:
                self.blockers.append((node, reason))
            if any(c.__name__ == "OpFromGraph" for c in type(node.op).__mro__) and not getattr(
                node.op, "is_inline", getattr(node.op, "inline", False)
            ):
                self.opaque.append(node)

    def _leading_source(self, var):
        """The inner input whose leading axis ``var``'s leading axis comes from (or None)."""
        api = self.api
        inputs = set(self.non_seq_outer)
        for _ in range(200):
            if id(var) in inputs:
                return var
            node = var.owner
            if node is None or not getattr(var.type, "ndim", 0):
                return None
            op, name = node.op, type(node.op).__name__
            nxt = None
            if isinstance(op, api.Elemwise):
                nxt = next((i for i in node.inputs if i.type.ndim == var.type.ndim and not i.type.broadcastable[0]), None)
            elif isinstance(op, api.DimShuffle):
                nxt = node.inputs[0] if list(op.new_order)[:1] == [0] else None
            elif isinstance(op, api.CAReduce):
                axis = getattr(op, "axis", None)
                nxt = node.inputs[0] if axis is not None and 0 not in axis else None
            elif isinstance(op, api.Dot) or name in ("Dot22", "Dot22Scalar", "_dot"):
                nxt = node.inputs[0]
            elif isinstance(op, (api.Alloc, api.AllocEmpty)):
                dim = node.inputs[1] if isinstance(op, api.Alloc) else node.inputs[0]
                owner = dim.owner
                while owner is not None and type(owner.op).__name__ in ("ScalarFromTensor", "TensorFromScalar"):
                    owner = owner.inputs[0].owner
                if owner is not None and isinstance(owner.op, api.Shape_i) and owner.op.i == 0:
                    nxt = owner.inputs[0]
            elif "Subtensor" in name or name in ("SpecifyShape", "DeepCopyOp", "OutputGuard", "ViewOp"):
                nxt = node.inputs[0]
            if nxt is None:
                return None
            var = nxt
        return None

    def _blocks(self, node) -> str:
        api, varying = self.api, self.varying
        name = type(node.op).__name__
        if isinstance(node.op, (api.Subtensor, api.IncSubtensor)):
            try:
                entries = self.plan.w.b.subtensor_indices(node)
            except Exception:  # noqa: BLE001
                return ""
            for e in entries:
                if isinstance(e, slice) and any(
                    x is not None and not isinstance(x, (int, np.integer)) and id(x) in varying
                    for x in (e.start, e.stop, e.step)
                ):
                    return "its slice bounds depend on the step, so each step's slice has another shape"
            return ""
        shape_inputs = {
            "ARange": node.inputs,
            "Alloc": node.inputs[1:],
            "AllocEmpty": node.inputs,
            "Reshape": node.inputs[1:],
        }.get(name)
        if shape_inputs is not None and any(id(i) in varying for i in shape_inputs):
            return "its output shape depends on the step"
        if isinstance(node.op, api.Scan) and id(node.inputs[0]) in varying:
            return "the nested scan's number of steps depends on the step"
        return ""

    def fill(self, rec, n_val):
        plan, lv = self.plan, self.plan.level
        rec.recurrent = self.recurrent
        rec.step_ops = len(self.nodes)
        for item in self.writes:
            node, dim = item["node"], item["dim"]
            value = lv.value(dim) if dim is not None else None
            equals = None
            if isinstance(value, int) and isinstance(n_val, int):
                equals = value == n_val
            if dim is not None and equals is not False:
                # under made-up input sizes too: equal by construction, not by coincidence
                probes = lv.probe([plan.n_steps, dim])
                pairs = [(p.get(plan.n_steps), p.get(dim)) for p in probes]
                if all(isinstance(a, int) and isinstance(b, int) for a, b in pairs):
                    equals = all(a == b for a, b in pairs)
            out = node.outputs[0]
            downstream = {id(out)}
            count = 0
            for n in self.nodes:
                if any(id(i) in downstream for i in n.inputs):
                    downstream.update(id(o) for o in n.outputs)
                    count += 1
            outer = item["outer"]
            target = plan._user_label(outer, "non_sequence", 0, None) if outer is not None else "a tensor built in the step"
            if target.startswith("<") and outer is not None:
                made = outer.owner.op if outer.owner is not None else "an input"
                target = f"a {outer.type.ndim}-D {outer.type.dtype} tensor made outside the step ({made})"
            rec.step_work.append(
                R.StepWork(
                    op=str(node.op),
                    target=target,
                    length=R.Dim(value if isinstance(value, int) else None, lv.formula(dim) if dim is not None else "?"),
                    equals_n_steps=equals,
                    downstream_ops=count,
                )
            )
        for node in self.opaque:
            name = getattr(node.op, "name", None) or type(node.op).__name__
            rec.opaque.append(R.Blocker(op=str(name), reason=f"{len(node.op.fgraph.apply_nodes) if hasattr(node.op, 'fgraph') else '?'} ops inside"))
        seen = set()
        for node, reason in self.blockers:
            if (str(node.op), reason) not in seen:
                seen.add((str(node.op), reason))
                rec.blockers.append(R.Blocker(op=str(node.op), reason=reason))


def _known_from_outer(lv, outer, drop_first):
    shape_vars = lv.shape(outer)
    vals = [lv.value(d) for d in shape_vars]
    shape = tuple(vals[1:] if drop_first else vals) if all(isinstance(v, int) for v in vals) else None
    value = None
    if getattr(outer.type, "ndim", None) == 0 and not drop_first:
        value = lv.value(outer)
        if value is not None:
            value = np.asarray(value, dtype=outer.type.dtype)
    if _is_constant(lv.api, outer) and not drop_first:
        value = outer.data
    if isinstance(outer, lv.api.SharedVariable) and not drop_first:
        value = outer.get_value(borrow=True)
    return (value, shape, "outer")


def _short_input(lv, x) -> str:
    if _is_constant(lv.api, x) and np.asarray(x.data).ndim == 0:
        return str(np.asarray(x.data).item())
    v = lv.value(x)
    if isinstance(v, (int, float)):
        return str(v)
    if getattr(x.type, "ndim", 1) == 0:
        return lv.formula(x)
    return f"<{_type_str(x)}>"


_PASS_THROUGH = ("Rebroadcast", "Unbroadcast", "SpecifyShape", "OutputGuard", "DeepCopyOp")


def _creator(api, var):
    """The Alloc/AllocEmpty (or other op) that creates a buffer, looking through set_subtensor."""
    seen = 0
    while var is not None and var.owner is not None and seen < 20:
        seen += 1
        node = var.owner
        if isinstance(node.op, (api.Alloc, api.AllocEmpty)):
            return var, node
        if isinstance(node.op, api.IncSubtensor) or type(node.op).__name__ in _PASS_THROUGH:
            var = node.inputs[0]
            continue
        return var, node
    return None, None


def _strip_to_root(api, var, through_subtensor=False):
    seen = 0
    while var is not None and var.owner is not None and seen < 20:
        seen += 1
        name = type(var.owner.op).__name__
        if (
            name in _PASS_THROUGH
            or name in ("DimShuffle",)
            or _op_name(var.owner.op) in ("Cast", "Identity")
            or (through_subtensor and isinstance(var.owner.op, api.Subtensor))
        ):
            var = var.owner.inputs[0]
            continue
        break
    return var


def _shape_source(api, creator_node, leading=True):
    """The graph input whose shape gives the trailing dimensions of an Alloc, if exactly one."""
    if creator_node is None:
        return None
    skip = 1 if leading else 0
    if isinstance(creator_node.op, api.AllocEmpty):
        trailing = creator_node.inputs[skip:]
    elif isinstance(creator_node.op, api.Alloc):
        trailing = creator_node.inputs[1 + skip :]
    else:
        return None
    found = []
    stack = list(trailing)
    seen = set()
    while stack:
        v = stack.pop()
        if id(v) in seen or v.owner is None:
            continue
        seen.add(id(v))
        if isinstance(v.owner.op, (api.Shape, api.Shape_i)):
            src = _strip_to_root(api, v.owner.inputs[0])
            if src not in found:
                found.append(src)
            continue
        stack.extend(v.owner.inputs)
    if len(found) == 1 and found[0].owner is None:
        return found[0]
    return None


# ---------------------------------------------------------------------- readers


def _reader_index_vars(plan, outer_out):
    """Scalar index variables used by Subtensors that read a scan output (to evaluate them)."""
    out = []
    lv = plan.level
    stack = [outer_out]
    seen = set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for node, _ in lv.clients.get(v, []):
            if node == "output":
                continue
            if isinstance(node.op, plan.api.Subtensor) and node.inputs[0] is v:
                for ent in plan.w.b.subtensor_indices(node)[:1]:
                    parts = [ent.start, ent.stop, ent.step] if isinstance(ent, slice) else [ent]
                    out.extend(p for p in parts if p is not None and not isinstance(p, int))
                stack.append(node.outputs[0])
            elif type(node.op).__name__ == "DimShuffle" or type(node.op).__name__ in _PASS_THROUGH:
                stack.append(node.outputs[0])
    return out


def _reads(plan, outer_out, buf) -> list[R.Read]:
    """How the history held by a scan output is read downstream (see ``records.Read``)."""
    lv = plan.level
    api = plan.api
    lead = buf.dims[0].value if buf.dims else None
    rows0 = range(lead) if isinstance(lead, int) else None
    reads: list[R.Read] = []
    # (variable, time axis, rows of the original buffer it holds or None, via_dimshuffle)
    # The scan output itself holds the whole buffer in Theano; in PyTensor too. Steps are
    # counted from the end, so an index k < 0 on any view that keeps the end reads row lead+k.
    # end: the view still ends at the buffer's last row (so a negative index counts from it)
    stack = [(outer_out, 0, rows0, False, 0, True)]
    seen = set()
    while stack:
        v, axis, rows, via_ds, depth, end = stack.pop()
        if id(v) in seen or depth > 12:
            continue
        seen.add(id(v))
        for node, pos in lv.clients.get(v, []):
            if node == "output":
                reads.append(R.Read("output", "function output", via_dimshuffle=via_ds, detail=_rows_str(rows)))
                continue
            op = node.op
            site = plan.w.session.user_site_from_trace(node.outputs[0])
            opname = type(op).__name__
            if isinstance(op, (api.Shape, api.Shape_i)):
                continue
            if isinstance(op, api.Subtensor) and pos == 0:
                idx = plan.w.b.subtensor_indices(node)
                ent = idx[axis] if axis < len(idx) else slice(None)
                # axes before the time axis that are integer-indexed drop out
                dropped = sum(1 for e in idx[:axis] if not isinstance(e, slice))
                if isinstance(ent, slice):
                    s = slice(*(lv.value(p) if p is not None and not isinstance(p, int) else p for p in (ent.start, ent.stop, ent.step)))
                    resolvable = all(x is None or isinstance(x, int) for x in (s.start, s.stop, s.step))
                    new_rows = rows[s] if rows is not None and resolvable else None
                    if (
                        new_rows is not None
                        and len(new_rows) > 0
                        and min(new_rows) >= len(rows0) - buf.needed_rows
                    ):
                        reads.append(R.Read("recent", opname, f"rows {_rows_str(new_rows)}", via_ds, site))
                        continue
                    if rows is None and end and isinstance(s.start, int) and s.start < 0 and s.stop is None and s.step in (None, 1) and -s.start <= buf.needed_rows:
                        reads.append(R.Read("recent", opname, f"last {-s.start} rows", via_ds, site))
                        continue
                    keeps_end = end and s.stop is None and s.step in (None, 1)
                    stack.append((node.outputs[0], axis - dropped, new_rows, via_ds, depth + 1, keeps_end))
                    continue
                i = lv.value(ent) if not isinstance(ent, int) else ent
                if isinstance(i, int):
                    if rows is not None:
                        try:
                            row = rows[i]
                        except IndexError:
                            reads.append(R.Read("opaque", opname, f"index {i} out of range", via_ds, site))
                            continue
                        kind = "recent" if row >= len(rows0) - buf.needed_rows else "rows"
                        reads.append(R.Read(kind, opname, f"row {row} of {len(rows0)}", via_ds, site))
                    elif i < 0 and end and -i <= buf.needed_rows:
                        reads.append(R.Read("recent", opname, f"index {i}", via_ds, site))
                    else:
                        reads.append(R.Read("opaque", opname, f"index {i}", via_ds, site))
                else:
                    reads.append(R.Read("opaque", opname, "index computed at run time", via_ds, site))
                continue
            if opname == "DimShuffle" and pos == 0:
                order = list(op.new_order)
                if axis in order:
                    stack.append((node.outputs[0], order.index(axis), rows, True, depth + 1, end))
                else:
                    reads.append(R.Read("recent", opname, "time axis dropped", True, site))
                continue
            if opname in _PASS_THROUGH:
                stack.append((node.outputs[0], axis, rows, via_ds, depth + 1, end))
                continue
            if isinstance(op, api.Scan):
                kind, sname = _role_in_scan(plan, node, pos)
                reads.append(R.Read(kind, opname, _rows_str(rows), via_ds, site, scan=sname))
                continue
            reads.append(R.Read("computation", f"{type(op).__name__}{'{' + _op_name(op) + '}' if hasattr(op, 'scalar_op') else ''}", _rows_str(rows), via_ds, site))
    return reads


def _rows_str(rows) -> str:
    if rows is None:
        return ""
    if len(rows) == 0:
        return "no rows"
    if len(rows) == 1:
        return f"row {rows[0]}"
    return f"{len(rows)} rows ({rows[0]}..{rows[-1]})"


def _role_in_scan(plan, node, pos):
    roles = plan.w.b.scan_roles(node)
    info = plan.w.b.scan_info(node.op)
    name = info["name"] or "scan_fn"
    v = node.inputs[pos]
    if any(x is v for x in roles.outer_in_seqs):
        return "scan_sequence", name
    return "scan_input", name
