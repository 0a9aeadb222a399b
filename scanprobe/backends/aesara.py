"""Aesara 2.9 adapter: the only module that imports aesara.

Aesara is PyTensor's predecessor (PyTensor forked it in 2022): the same modules under another
name, so the PyTensor adapter's feature tests cover it; only the names differ.
"""

from __future__ import annotations

from scanprobe.backends.pytensor import PyTensorBackend


class AesaraBackend(PyTensorBackend):
    name = "aesara"
    module_name = "aesara"
    install_hint = "pip install 'scanprobe[aesara]'  (Aesara 2.9 needs numpy<2)"
    save_mem_tag = "scan_save_mem"
    save_mem_rewrites = ("scan_save_mem",)
    c_linker_module = "aesara.link.c.basic"

    def load(self, notes):
        if self.api is not None:
            return self.api.module
        import logging
        import warnings

        # Aesara's import asks numpy.distutils for BLAS, which warns on stderr when there is none;
        # scanprobe's own output (and its JSON on stdout) stays clean
        logging.getLogger("aesara.tensor.blas").setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return super().load(notes)
