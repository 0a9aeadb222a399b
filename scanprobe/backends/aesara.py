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
