"""Theano 1.0.5 adapter: the only module that imports theano."""

from __future__ import annotations

import os
import sys
import weakref

from scanprobe.backends.base import Api
from scanprobe.backends.family import FamilyBackend


def _flag_set(flags: str, key: str) -> bool:
    return any(part.split("=", 1)[0].strip() == key for part in flags.split(",") if part.strip())


def _theanorc_sets(key: str) -> bool:
    """Whether a .theanorc file sets ``section.option`` (e.g. blas.ldflags)."""
    import configparser

    section, option = key.split(".", 1)
    paths = os.environ.get("THEANORC", "~/.theanorc:~/.theanorc.txt").split(os.pathsep)
    for path in paths:
        path = os.path.expanduser(path)
        if os.path.exists(path):
            cp = configparser.ConfigParser()
            try:
                cp.read(path)
            except configparser.Error:
                continue
            if cp.has_option(section, option):
                return True
    return False


class TheanoBackend(FamilyBackend):
    name = "theano"
    module_name = "theano"
    install_hint = "pip install 'scanprobe[theano]'  (Theano 1.0.5 needs numpy<1.24)"
    save_mem_tag = "scanOp_save_mem"
    save_mem_rewrites = ("scanOp_save_mem",)
    c_linker_module = "theano.gof.cc"
    clone_code = "theano.clone"
    checkpoints_code = "theano.scan_checkpoints"
    no_gpu_reason = "Theano's GPU backend needs pygpu/libgpuarray, which PyPI does not provide"

    #: What scanprobe set before Theano's first import in this process (said again on every load).
    _added: list | None = None

    def load(self, notes):
        if self.api is not None:
            return self.api.module
        if TheanoBackend._added is not None:  # imported earlier in this process, by scanprobe
            self._note(notes, TheanoBackend._added)
            return self._build_api()
        flags = os.environ.get("THEANO_FLAGS", "")
        added = []
        # Theano 1.0.5 reads numpy.distutils' BLAS info at import, which current numpy lacks;
        # an empty ldflags makes it use numpy's C-API BLAS instead (see docs/backends-measured.md).
        if not _flag_set(flags, "blas.ldflags") and not _theanorc_sets("blas.ldflags"):
            added.append("blas.ldflags=")
        if added:
            os.environ["THEANO_FLAGS"] = ",".join([f for f in [flags] if f] + added)
        if sys.version_info >= (3, 11) and "theano.scan_module.scan_perform_ext" not in sys.modules:
            # Theano's C scan loop is Cython 0.28 output that does not build on Python 3.11;
            # Theano falls back to its Python loop when this import fails. Everything else
            # stays in C.
            sys.modules["theano.scan_module.scan_perform_ext"] = None
            added.append("Python scan loop (the C scan does not build on Python >= 3.11)")
        import logging

        logging.getLogger("theano.tensor.blas").setLevel(logging.ERROR)
        try:
            import theano  # noqa: F401
        except Exception as exc:
            from scanprobe.errors import BackendUnavailable

            raise BackendUnavailable(
                f"theano failed to import: {type(exc).__name__}: {exc}".splitlines()[0],
                hint=self.install_hint,
            ) from None
        finally:  # Theano read its flags at import: the user's environment is left as it was
            if flags:
                os.environ["THEANO_FLAGS"] = flags
            else:
                os.environ.pop("THEANO_FLAGS", None)
        TheanoBackend._added = added
        self._note(notes, added)
        return self._build_api()

    @staticmethod
    def _note(notes, added):
        if added:
            notes.append("theano: added " + "; ".join(added) + " (your own THEANO_FLAGS are kept)")

    def _build_api(self):
        import theano
        import theano.tensor as T
        from theano.compile import builders, function_module, mode as mode_mod, ops as cops
        from theano.compile.sharedvalue import SharedVariable
        from theano.gof import graph as g
        from theano.gof.fg import FunctionGraph
        from theano.scan_module import scan_op, scan_utils
        from theano.tensor import basic as tb, elemwise, subtensor

        self._scan_args = scan_utils.scan_args
        self._scan_utils = scan_utils
        self._get_idx_list = subtensor.get_idx_list
        self._OpFromGraph = builders.OpFromGraph
        self.api = Api(
            module=theano,
            function=theano.function,
            scan=theano.scan,
            FunctionMaker=function_module.FunctionMaker,
            get_mode=mode_mod.get_mode,
            Mode=mode_mod.Mode,
            optdb=mode_mod.optdb,
            config=theano.config,
            Scan=scan_op.Scan,
            Alloc=tb.Alloc,
            AllocEmpty=tb.AllocEmpty,
            Subtensor=subtensor.Subtensor,
            IncSubtensor=subtensor.IncSubtensor,
            DimShuffle=elemwise.DimShuffle,
            Elemwise=elemwise.Elemwise,
            CAReduce=elemwise.CAReduce,
            Dot=tb.Dot,
            Shape=cops.Shape,
            Shape_i=cops.Shape_i,
            FunctionGraph=FunctionGraph,
            Constant=g.Constant,
            SharedVariable=SharedVariable,
            Variable=g.Variable,
            T=T,
            grad=theano.grad,
            clone_replace=theano.clone,
            equal_computations=scan_utils.equal_computations,
            vectorize_graph=None,
        )
        return theano

    def _function_homes(self):
        theano = self.api.module
        fmod = sys.modules.get("theano.compile.function")
        return [(theano, "function"), (theano.compile, "function"), (fmod, "function")]

    def _taps(self, op):
        tap_array = list(op.tap_array)
        n_mm, n_ms, n_ss = op.n_mit_mot, op.n_mit_sot, op.n_sit_sot
        return {
            "mit_mot": tap_array[:n_mm],
            "mit_sot": tap_array[n_mm : n_mm + n_ms],
            "sit_sot": tap_array[n_mm + n_ms : n_mm + n_ms + n_ss],
        }

    def _as_while(self, op):
        return op.as_while

    def _inner_inputs(self, op):
        return op.inputs

    def _inner_outputs(self, op):
        return op.outputs

    def scan_roles(self, node, thawed=False):
        """The roles of a Scan's inputs and outputs, over the op's own inner variables.

        Theano's ``scan_args`` copies the step graph (``reconstruct_graph``): 1.4 s per call on a
        9,600-op step, and the walk asks several times per scan. Nothing scanprobe does changes
        an inner graph in place (it builds on top, and its rewrites clone), so the copy is
        skipped and one result kept per node. ``thawed`` is a PyTensor 3 notion (frozen inner
        graphs): Theano's inner graphs can always be built on.
        """
        cache = self.__dict__.setdefault("_roles", weakref.WeakKeyDictionary())
        args = cache.get(node)
        if args is None:
            op = node.op
            home = self._scan_utils
            copy = home.reconstruct_graph
            home.reconstruct_graph = lambda inputs, outputs, tag=None: (list(inputs), list(outputs))
            try:
                args = cache[node] = self._scan_args(node.inputs, node.outputs, op.inputs, op.outputs, op.info)
            finally:
                home.reconstruct_graph = copy
        return args

    def scan_args_copy(self, node):
        """The roles of a Scan over a fresh copy of its inner graph (``scan_args`` copies it),
        free to edit and rebuild (``scan_from_args``)."""
        op = node.op
        return self._scan_args(node.inputs, node.outputs, op.inputs, op.outputs, op.info)

    def scan_from_args(self, node, args) -> list:
        """The outputs of a new Scan node built from edited roles, with ``node``'s settings."""
        info = dict(args.info)
        info["destroy_map"] = {}
        new_op = type(node.op)(list(args.inner_inputs), list(args.inner_outputs), info)
        return list(new_op(*args.outer_inputs, return_list=True))

    def subtensor_indices(self, node):
        return list(self._get_idx_list(node.inputs, node.op.idx_list))

    def inc_subtensor_indices(self, node):
        return list(self._get_idx_list([node.inputs[0]] + list(node.inputs[2:]), node.op.idx_list))
