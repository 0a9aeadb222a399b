"""PyTensor adapter (2.x and 3.x): the only module that imports pytensor.

Differences between PyTensor versions are decided by feature tests here (``FunctionMaker``'s
home, a lazy ``ShapeFeature``, frozen inner graphs, the optimizer's own OpFromGraph subclasses).
"""

from __future__ import annotations

import importlib
import sys
import types

from scanprobe.backends.base import Api
from scanprobe.backends.family import FamilyBackend


class PyTensorBackend(FamilyBackend):
    name = "pytensor"
    module_name = "pytensor"
    install_hint = "pip install 'scanprobe[pytensor]'"
    save_mem_tag = "scan_save_mem"
    c_linker_module = "pytensor.link.c.basic"
    save_mem_rewrites = (
        "scan_reduce_trace_prealloc",
        "scan_reduce_trace_no_prealloc",
        "scan_save_mem",  # before 2.31, and Aesara
    )
    compiled_graph_is_optimized = True

    # PyMC builds its models on PyTensor: its samplers' functions are this backend's targets
    def models_in(self, namespace):
        from scanprobe.backends import pymc

        return pymc.models_in(namespace)

    def model_functions(self, model):
        from scanprobe.backends import pymc

        return pymc.model_functions(model)

    def is_model(self, obj):
        from scanprobe.backends import pymc

        return pymc.is_model(obj)

    @property
    def clone_code(self):
        return f"{self.module_name}.graph.clone_replace"

    @property
    def checkpoints_code(self):
        return f"{self.module_name}.scan.checkpoints.scan_checkpoints"

    def _import(self, name):
        return importlib.import_module(f"{self.module_name}.{name}" if name else self.module_name)

    def load(self, notes):
        if self.api is not None:
            return self.api.module
        try:
            lib = self._import("")
        except Exception as exc:
            from scanprobe.errors import BackendUnavailable

            raise BackendUnavailable(
                f"{self.module_name} failed to import: {type(exc).__name__}: {exc}".splitlines()[0],
                hint=self.install_hint,
            ) from None
        imp = self._import
        mode_mod = imp("compile.mode")
        basic = imp("graph.basic")
        replace = imp("graph.replace") if self._has("graph.replace") else None
        tb, elemwise, subtensor = imp("tensor.basic"), imp("tensor.elemwise"), imp("tensor.subtensor")
        shape_mod = imp("tensor.shape") if self._has("tensor.shape") else tb
        math = imp("tensor.math") if self._has("tensor.math") else tb
        scan_op, scan_utils = imp("scan.op"), imp("scan.utils")
        maker_home = imp("compile.maker") if self._has("compile.maker") else imp("compile.function.types")
        self._ScanArgs = scan_utils.ScanArgs
        self._indices_from_subtensor = subtensor.indices_from_subtensor
        self._OpFromGraph = imp("compile.builders").OpFromGraph
        clone_replace = getattr(replace, "clone_replace", None) or getattr(basic, "clone_replace")
        self.api = Api(
            module=lib,
            function=lib.function,
            scan=lib.scan,
            FunctionMaker=maker_home.FunctionMaker,
            get_mode=mode_mod.get_mode,
            Mode=mode_mod.Mode,
            optdb=mode_mod.optdb,
            config=lib.config,
            Scan=scan_op.Scan,
            Alloc=tb.Alloc,
            AllocEmpty=tb.AllocEmpty,
            Subtensor=subtensor.Subtensor,
            IncSubtensor=subtensor.IncSubtensor,
            DimShuffle=elemwise.DimShuffle,
            Elemwise=elemwise.Elemwise,
            CAReduce=elemwise.CAReduce,
            Dot=math.Dot,
            Shape=shape_mod.Shape,
            Shape_i=shape_mod.Shape_i,
            FunctionGraph=imp("graph.fg").FunctionGraph,
            Constant=basic.Constant,
            SharedVariable=imp("compile.sharedvalue").SharedVariable,
            Variable=basic.Variable,
            T=imp("tensor"),
            grad=imp("gradient").grad,
            clone_replace=clone_replace,
            equal_computations=basic.equal_computations,
            vectorize_graph=getattr(replace, "vectorize_graph", None),
        )
        return lib

    def _has(self, name) -> bool:
        import importlib.util

        try:
            return importlib.util.find_spec(f"{self.module_name}.{name}") is not None
        except ModuleNotFoundError:
            return False

    def _function_homes(self):
        lib = self.api.module
        homes = [(lib, "function"), (lib.compile, "function")]
        for modname in (f"{self.module_name}.compile.maker", f"{self.module_name}.compile.function"):
            mod = sys.modules.get(modname)
            if mod is not None and hasattr(mod, "function") and not isinstance(mod.function, types.ModuleType):
                homes.append((mod, "function"))
        return homes

    def _taps(self, op):
        info = op.info
        return {
            "mit_mot": list(info.mit_mot_in_slices),
            "mit_sot": list(info.mit_sot_in_slices),
            "sit_sot": list(info.sit_sot_in_slices),
        }

    def _as_while(self, op):
        return op.info.as_while

    def scan_roles(self, node, thawed=False):
        if thawed and self._frozen(node.op):
            # PyTensor >= 3.1.1 keeps a Scan's inner graph frozen (its nodes cannot be cloned
            # with new inputs): a thawed copy, with the names and traces of the frozen graph
            args = self._ScanArgs.from_node(node, clone=True)
            self._carry_tags(node.op, args)
            return args
        return self._ScanArgs.from_node(node)

    def scan_args_copy(self, node):
        """The roles of a Scan over a fresh copy of its inner graph, free to edit and rebuild
        (``scan_from_args``)."""
        args = self._ScanArgs.from_node(node, clone=True)
        self._carry_tags(node.op, args)
        return args

    def scan_from_args(self, node, args) -> list:
        """The outputs of a new Scan node built from edited roles, with ``node``'s settings."""
        import inspect

        op = node.op
        settings = {k: getattr(op, k) for k in ("mode", "truncate_gradient", "name", "profile", "allow_gc", "strict")
                    if hasattr(op, k)}
        if "as_while" in inspect.signature(type(op).__init__).parameters:  # Aesara
            settings["as_while"] = args.as_while
        new_op = type(op)(list(args.inner_inputs), list(args.inner_outputs), args.info, **settings)
        return list(new_op(*args.outer_inputs, return_list=True))

    @staticmethod
    def _frozen(op) -> bool:
        return hasattr(getattr(op, "fgraph", None), "unfreeze")

    def inner_graph(self, node):
        if self._frozen(node.op):  # thawed: the walk builds and compiles on top of it
            args = self.scan_roles(node, thawed=True)
            return list(args.inner_inputs), list(args.inner_outputs)
        return list(node.op.inner_inputs), list(node.op.inner_outputs)

    @staticmethod
    def _carry_tags(op, args):
        """Names and traces from the frozen inner graph onto the thawed copy (same positions)."""
        for old, new in zip(list(op.inner_inputs) + list(op.inner_outputs),
                            list(args.inner_inputs) + list(args.inner_outputs)):
            if getattr(old, "name", None) and not getattr(new, "name", None):
                new.name = old.name
            trace = getattr(old.tag, "trace", None)
            if trace and not getattr(new.tag, "trace", None):
                new.tag.trace = trace

    def subtensor_indices(self, node):
        return list(self._indices_from_subtensor(node.inputs[1:], node.op.idx_list))

    def inc_subtensor_indices(self, node):
        return list(self._indices_from_subtensor(node.inputs[2:], node.op.idx_list))
