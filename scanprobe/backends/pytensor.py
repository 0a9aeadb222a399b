"""PyTensor adapter: the only module that imports pytensor."""

from __future__ import annotations

import sys
import types

from scanprobe.backends.family import FamilyBackend


class PyTensorBackend(FamilyBackend):
    name = "pytensor"
    module_name = "pytensor"
    install_hint = "pip install 'scanprobe[pytensor]'"
    save_mem_tag = "scan_save_mem"
    save_mem_rewrites = (
        "scan_reduce_trace_prealloc",
        "scan_reduce_trace_no_prealloc",
        "scan_save_mem",  # before 2.31
    )

    def load(self, notes):
        if self.api is not None:
            return self.api.module
        try:
            import pytensor
        except Exception as exc:
            from scanprobe.errors import BackendUnavailable

            raise BackendUnavailable(
                f"pytensor failed to import: {type(exc).__name__}: {exc}".splitlines()[0],
                hint=self.install_hint,
            ) from None
        import pytensor.tensor as pt
        from pytensor.compile import mode as mode_mod
        from pytensor.compile.sharedvalue import SharedVariable
        from pytensor.graph.basic import Constant, Variable
        from pytensor.graph.fg import FunctionGraph
        from pytensor.graph.basic import equal_computations
        from pytensor.graph.replace import clone_replace, graph_replace, vectorize_graph
        from pytensor.tensor.math import Dot
        from pytensor.scan.op import Scan
        from pytensor.scan.utils import ScanArgs
        from pytensor.tensor import basic as tb, elemwise, subtensor
        from pytensor.tensor.shape import Shape, Shape_i
        from pytensor.tensor.rewriting.shape import ShapeFeature

        try:
            from pytensor.compile.maker import FunctionMaker
        except ImportError:  # PyTensor < 3
            from pytensor.compile.function.types import FunctionMaker

        self.api = types.SimpleNamespace(
            module=pytensor,
            function=pytensor.function,
            scan=pytensor.scan,
            FunctionMaker=FunctionMaker,
            get_mode=mode_mod.get_mode,
            Mode=mode_mod.Mode,
            optdb=mode_mod.optdb,
            Scan=Scan,
            ScanArgs=ScanArgs,
            Alloc=tb.Alloc,
            AllocEmpty=tb.AllocEmpty,
            Subtensor=subtensor.Subtensor,
            IncSubtensor=subtensor.IncSubtensor,
            indices_from_subtensor=subtensor.indices_from_subtensor,
            DimShuffle=elemwise.DimShuffle,
            Shape=Shape,
            Shape_i=Shape_i,
            ShapeFeature=ShapeFeature,
            FunctionGraph=FunctionGraph,
            clone_replace=clone_replace,
            Constant=Constant,
            SharedVariable=SharedVariable,
            Variable=Variable,
            config=pytensor.config,
            fgraph_for_infer_shape=None,
            T=pt,
            grad=pt.grad,
            equal_computations=equal_computations,
            Elemwise=elemwise.Elemwise,
            CAReduce=elemwise.CAReduce,
            Dot=Dot,
            vectorize_graph=vectorize_graph,
            graph_replace=graph_replace,
        )
        return pytensor

    compiled_graph_is_optimized = True

    def version(self):
        return self.api.module.__version__ if self.api else ""

    def _function_homes(self):
        pytensor = self.api.module
        homes = [(pytensor, "function"), (pytensor.compile, "function")]
        for modname in ("pytensor.compile.maker", "pytensor.compile.function"):
            mod = sys.modules.get(modname)
            if mod is not None and hasattr(mod, "function") and not isinstance(mod.function, types.ModuleType):
                homes.append((mod, "function"))
        return homes

    def _scan_homes(self):
        return [(self.api.module, "scan")]

    def scan_info(self, op):
        info = op.info
        return {
            "name": op.name,
            "as_while": info.as_while,
            "truncate_gradient": getattr(op, "truncate_gradient", -1),
            "taps": {
                "mit_mot": list(info.mit_mot_in_slices),
                "mit_sot": list(info.mit_sot_in_slices),
                "sit_sot": list(info.sit_sot_in_slices),
            },
            "inner_inputs": op.inner_inputs,
            "inner_outputs": op.inner_outputs,
        }

    def scan_roles(self, node):
        return self.api.ScanArgs.from_node(node)

    def subtensor_indices(self, node):
        return list(self.api.indices_from_subtensor(node.inputs[1:], node.op.idx_list))
