"""The hooks a user's module runs under (``install_hooks``): ``function``, ``scan``, ``grad`` and
``shared`` captured, and every scan gradient the backend builds recorded (``hook_pullbacks``).
Part of the Theano family's adapter (``family.FamilyBackend``)."""

from __future__ import annotations

from abc import abstractmethod


class Hooks:
    """Swapped attributes of the backend's modules and classes, undone by ``remove_hooks``."""

    api = None
    _saved: list

    @abstractmethod
    def _function_homes(self):
        """(object, attribute) pairs through which users reach ``function``."""

    def _scan_homes(self):
        """(object, attribute) pairs through which users reach ``scan``."""
        return [(self.api.module, "scan")]

    def _grad_homes(self):
        """(object, attribute) pairs through which users reach ``grad``."""
        lib = self.api.module
        return [(lib, "grad"), (getattr(lib, "tensor", None), "grad"), (getattr(lib, "gradient", None), "grad")]

    def _shared_homes(self):
        """(object, attribute) pairs through which users reach ``shared``."""
        lib = self.api.module
        return [(lib, "shared"), (getattr(lib, "compile", None), "shared")]

    def install_hooks(self, session) -> None:
        api = self.api
        original_shared = getattr(api.module, "shared", None)
        if original_shared is not None:
            def shared(*args, **kwargs):
                return session.capture_shared(original_shared, args, kwargs)

            shared.__doc__ = original_shared.__doc__
            shared.__wrapped__ = original_shared
            for obj, attr in self._shared_homes():
                if obj is not None and getattr(obj, attr, None) is original_shared:
                    self._swap(obj, attr, shared)
        original_function = api.function
        original_scan = api.scan
        original_grad = api.grad

        def grad(*args, **kwargs):
            return session.capture_grad(original_grad, args, kwargs)

        grad.__doc__ = original_grad.__doc__
        grad.__wrapped__ = original_grad
        for obj, attr in self._grad_homes():
            if obj is not None and getattr(obj, attr, None) is original_grad:
                self._swap(obj, attr, grad)

        self.hook_pullbacks(session.record_pullback)

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

    def hook_pullbacks(self, record) -> None:
        """Until ``remove_hooks``: ``record(outputs, output_grads, input_grads)`` for every scan
        gradient the backend's grad machinery builds: what it fed the scan's pullback and what that
        made (a checkpointed gradient is rebuilt from them: fixes/checkpoint.py)."""
        method = self.pullback_method()
        original_pullback = getattr(self.api.Scan, method)

        config = self.api.config

        def pullback(op, inputs, outs, output_grads):
            # this wrapper is one frame more on the stack: the backend's traces of what the
            # pullback builds keep as many frames as without it (the user's line stays in reach)
            with _one_more_frame(config):
                result = original_pullback(op, inputs, outs, output_grads)
            record(outs, output_grads, result)
            return result

        pullback.__wrapped__ = original_pullback
        self._swap(self.api.Scan, method, pullback)

    def pullback_method(self) -> str:
        """The Scan method the backend's ``grad`` calls for a scan's gradient: ``pullback``
        (PyTensor >= 3) or ``L_op``."""
        return "pullback" if "pullback" in vars(self.api.Scan) else "L_op"

    def _swap(self, obj, attr, new):
        if obj is not None and hasattr(obj, attr):
            self._saved.append((obj, attr, getattr(obj, attr)))
            setattr(obj, attr, new)

    def remove_hooks(self) -> None:
        while self._saved:
            obj, attr, old = self._saved.pop()
            setattr(obj, attr, old)




class TraceLimit:
    """The backend's traceback limit set to ``new(old)`` for the duration of a ``with`` block
    (0 by default; left as it is where ``new`` gives None)."""

    def __init__(self, config, new=lambda old: 0):
        self.config, self.new, self.saved = config, new, None

    def __enter__(self):
        cfg = self.config
        try:
            name = "traceback__limit" if hasattr(cfg, "traceback__limit") else "limit"  # PyTensor, Aesara / Theano
            holder = cfg if name == "traceback__limit" else cfg.traceback
            old = getattr(holder, name)
            value = self.new(old)
            if value is not None:
                self.saved = (holder, name, old)
                setattr(holder, name, value)
        except Exception:  # noqa: BLE001 - a config without the flag: nothing to do
            self.saved = None
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            holder, name, old = self.saved
            setattr(holder, name, old)
        return False


def _one_more_frame(config):
    """The traceback limit one frame longer (where it is a positive limit)."""
    return TraceLimit(config, lambda old: old + 1 if old > 0 else None)
