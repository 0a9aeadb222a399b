"""Run a user's module and capture every function it compiles (and every scan it builds).

The module runs as an import (``__name__`` is not ``"__main__"``), so a training loop under
``if __name__ == "__main__":`` does not run. While it runs, the backend's ``function`` returns a
lazy stand-in: the graph is compiled once, in the mode scanprobe analyses, and linked only if the
user's code calls the function.
"""

from __future__ import annotations

import ast
import contextlib
import os
import posix
import sys
import sysconfig
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scanprobe.bindings import bindings, flatten, wrapped
from scanprobe.errors import ScanprobeError, Timeout, UserCodeError
from scanprobe.records import Site
from scanprobe.scancalls import ScanCall
from scanprobe.runners.exits import REAL_EXIT

_ARRAY_LIKE_MSG = "Expected an array-like object, but found a Variable"
_THIS_FILE = os.path.realpath(__file__)


def _library_roots() -> list[str]:
    roots = set()
    for key in ("purelib", "platlib", "stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.add(os.path.realpath(p))
    roots.add(os.path.realpath(os.path.dirname(os.path.dirname(__file__))) + os.sep + "scanprobe")
    return sorted(roots)


@dataclass
class Captured:
    """One call to the backend's ``function`` made while the user's module ran."""

    index: int
    origin: str  # user | library
    args: tuple
    kwargs: dict
    site: Site | None
    names: list[str] = field(default_factory=list)
    function: Any = None  # the real function (library compiles, or once linked)
    built: Any = None
    #: values of explicit inputs by name (or "#i") that the target comes with: a model's
    #: initial point (``source`` says so in the report)
    given: dict = field(default_factory=dict)
    given_source: str = ""

    @property
    def label(self) -> str:
        if self.names:
            return self.names[0]
        if self.site is not None:
            return f"{os.path.basename(self.site.file)}:{self.site.line}"
        return f"function#{self.index}"

    def explicit_inputs(self) -> list:
        inputs = self.args[0] if self.args else self.kwargs.get("inputs", [])
        return [getattr(v, "variable", v) for v in (inputs or [])]

    def explicit_labels(self) -> list[str]:
        vars_ = self.explicit_inputs()
        names = [getattr(v, "name", None) for v in vars_]
        out = []
        for i, n in enumerate(names):
            if not n:
                out.append(f"#{i}")
            elif names.count(n) > 1:
                out.append(f"{n}#{i}")
            else:
                out.append(n)
        return out

    def input_label(self, i, var) -> str:
        labels = self.explicit_labels()
        if i < len(labels):
            return labels[i]
        return ""  # shared: named by the session


@dataclass
class Pullback:
    """One scan's gradient as the backend built it: ``node`` (the forward Scan), ``cotangents``
    (one per output: what the loss feeds it; a disconnected type where nothing does) and
    ``grads`` (one per input: the gradients it made, which the rest of the user's graph reads)."""

    node: object
    cotangents: list
    grads: list


def record_pullback(pullbacks: dict, outs, output_grads, result) -> None:
    """``pullbacks[id(Scan node)] = Pullback(...)`` for one scan gradient the backend built."""
    node = outs[0].owner if outs else None
    if node is not None:
        pullbacks[id(node)] = Pullback(node, list(output_grads), list(result))


class LazyFunction:
    """What the user's ``function(...)`` returns under scanprobe: links on first use."""

    def __init__(self, session, captured):
        self._sp_session = session
        self._sp_captured = captured

    def _sp_real(self):
        return self._sp_session.realize(self._sp_captured)

    def __call__(self, *args, **kwargs):
        symbolic = self._sp_session.symbolic_args(args, kwargs)
        if symbolic:
            raise self._sp_session.compiled_function_in_graph(self._sp_captured, symbolic)
        return self._sp_real()(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("_sp_"):
            raise AttributeError(name)
        return getattr(self._sp_real(), name)

    def __repr__(self):
        return f"<scanprobe lazy function {self._sp_captured.label}>"


class CaptureSession:
    """State of one run of a user module: captured compiles and scans, names, the user's files."""

    def __init__(self, path: Path, backend, mode_override=None, progress=None):
        self.path = Path(path).resolve()
        self.user_dir = str(self.path.parent)
        self.backend = backend
        self.mode_override = mode_override
        self.progress = progress
        self.functions: list[Captured] = []
        self.scan_calls: list[ScanCall] = []
        self._open_scans: list[int] = []
        self._shared_sites: dict = {}
        self.module: types.ModuleType | None = None
        self._lib_roots = _library_roots()
        self._backend_root = ""
        self._names: dict[int, str] = {}
        self._compiling_for = None  # (name, site): a model's function being compiled by scanprobe
        #: id(Scan node) -> Pullback: the gradients of scans taken while the module ran
        self.pullbacks: dict[int, Pullback] = {}

    # ---------------------------------------------------------------- files
    def is_user_file(self, filename: str) -> bool:
        """The user's code is every file that is not installed code: not the standard library,
        not site-packages or a virtual environment, not scanprobe nor the backend. (A project's
        model code in a sibling folder of the script is the user's.)"""
        if not filename or filename.startswith("<"):
            return False
        real = os.path.realpath(filename)
        if real == str(self.path):
            return True
        if any(real.startswith(r + os.sep) for r in self._lib_roots):
            return False
        parts = real.split(os.sep)
        return not any(p in ("site-packages", "dist-packages") or p.startswith(".venv") for p in parts)

    def _user_frame_behind(self, frame):
        """The innermost user frame that a library call was made from, or None when the library
        runs on its own (at its import: the frames between are the import machinery)."""
        f = frame.f_back
        while f is not None:
            name = f.f_code.co_filename
            if "importlib" in name or name.startswith("<frozen"):
                return None
            if self.is_user_file(name):
                return f
            if os.path.realpath(name) == _THIS_FILE:  # scanprobe runs the module here
                return None
            f = f.f_back
        return None

    def _caller(self, depth: int):
        frame = sys._getframe(depth)
        return frame

    def _frame_site(self, frame) -> Site:
        info = traceback.extract_stack(frame, limit=1)[-1]
        return Site(info.filename, info.lineno, (info.line or "").strip(), info.name)

    # ---------------------------------------------------------------- hooks
    def capture_function(self, original, args, kwargs):
        """A ``function(...)`` call: never compiled here, only recorded (a ``LazyFunction`` links
        it if the module calls it). Called from the user's code: a target. Called by a library on
        the user's behalf (a user frame behind it): a target too, named by the user's line.
        A library compiling its own helper (at its import): recorded as skipped, not analysed
        unless --include-library. The backend's own compiles (``.eval()``) pass through."""
        caller = self._caller(3)
        filename = caller.f_code.co_filename
        if self._compiling_for is not None and not os.path.realpath(filename).startswith(self.backend.package_dir()):
            name, site = self._compiling_for
            cap = Captured(len(self.functions), "model", args, kwargs, site, names=[name])
            self.functions.append(cap)
            return LazyFunction(self, cap)
        if self.is_user_file(filename):
            origin, site = "user", self._frame_site(caller)
        elif os.path.realpath(filename).startswith(self.backend.package_dir()):
            return original(*args, **kwargs)
        else:
            user = self._user_frame_behind(caller)
            origin = "framework" if user is not None else "library"
            site = self._frame_site(user if user is not None else caller)
        cap = Captured(len(self.functions), origin, args, kwargs, site)
        self.functions.append(cap)
        return LazyFunction(self, cap)

    def capture_scan(self, original, args, kwargs):
        caller = self._caller(3)
        user = self.is_user_file(caller.f_code.co_filename)
        if user:  # scans built while this one's step function runs are nested in it
            self._open_scans.append(len(self.scan_calls))
            self.scan_calls.append(None)
        try:
            result = original(*args, **kwargs)
        except BaseException:
            if user:  # the call failed: no scan to name (the calls it contained stay)
                del self.scan_calls[self._open_scans.pop()]
            raise
        if user:
            index = self._open_scans.pop()
            params = ["fn", "sequences", "outputs_info", "non_sequences", "n_steps"]
            bound = dict(zip(params, args))
            bound.update(kwargs)

            def as_list(x):
                if x is None:
                    return []
                return list(x) if isinstance(x, (list, tuple)) else [x]

            parent = self.scan_calls[self._open_scans[-1]] if self._open_scans else None
            call = ScanCall(
                site=self._frame_site(caller),
                fn=bound.get("fn"),
                sequences=as_list(bound.get("sequences")),
                outputs_info=as_list(bound.get("outputs_info")),
                non_sequences=as_list(bound.get("non_sequences")),
                name=bound.get("name"),
            )
            self.scan_calls[index] = call
            for inner in self.scan_calls[index + 1:]:
                if inner is not None and inner.parent is None and inner is not call:
                    inner.parent = call
            del parent
        return result

    def capture_shared(self, original, args, kwargs):
        """A user's ``shared(...)``: remember where it was made (to name an unnamed one)."""
        caller = self._caller(3)
        var = original(*args, **kwargs)
        if self.is_user_file(caller.f_code.co_filename):
            self._shared_sites.setdefault(id(getattr(var, "container", None) or var), self._frame_site(caller))
        return var

    def shared_site(self, var):
        """The user's line that made a shared variable, or None."""
        return self._shared_sites.get(id(getattr(var, "container", None) or var))

    def record_pullback(self, outs, output_grads, result):
        """A scan's gradient taken while the module ran (the backend's grad machinery called its
        pullback): the cotangents it was fed and the input gradients it made, by Scan node."""
        record_pullback(self.pullbacks, outs, output_grads, result)

    def capture_grad(self, original, args, kwargs):
        """A user's ``grad(...)``: the Scan nodes it creates (the backward passes of their scans)
        get the user's line in their trace when the backend's own trace does not reach it (deep
        gradient recursion outruns the backend's traceback limit). Rewrites copy traces, so the
        optimized graph's gradient scans keep that line."""
        from scanprobe.backends.graphs import ancestors

        caller = self._caller(3)
        user = self.is_user_file(caller.f_code.co_filename)
        given = [v for v in flatten([list(args), list(kwargs.values())]) if self.backend.is_variable(v)] if user else []
        before = {id(v.owner) for v in ancestors(given) if v.owner is not None and self.backend.is_scan(v.owner)}
        result = original(*args, **kwargs)
        if user:
            site = self._frame_site(caller)
            entry = [(site.file, site.line, site.function, site.code)]

            def at_call(o):
                found = self.user_site_from_trace(o)
                return found is not None and (found.file, found.line) == (site.file, site.line)

            outs = [v for v in flatten(result) if self.backend.is_variable(v)]
            for var in ancestors(outs):
                node = var.owner
                if node is None or not self.backend.is_scan(node) or id(node) in before:
                    continue
                before.add(id(node))  # once per node (not every output of it is read)
                # a scan this call built: its line is the grad call's (some outputs' traces are
                # copied from the forward scan's, and the backend's own may stop short of the call)
                if not any(at_call(o) for o in node.outputs):
                    for o in node.outputs:
                        o.tag.trace = [list(entry)]
        return result

    # ---------------------------------------------------------------- compile
    def build(self, cap: Captured):
        """Optimize a captured graph once, in the analysed mode (no linking)."""
        if cap.built is None:
            try:
                cap.built = self.backend.build(cap, self.mode_override)
            except ScanprobeError:
                raise
            except Exception as exc:
                err = _user_error(self, exc, f"compiling {cap.label} failed:")
                if not err.frames and cap.site is not None:
                    err.frames = [cap.site]
                    err.message = err.message.replace(" failed: ", f" (compiled at {cap.site.short()}) failed: ", 1)
                    err.hint = f"fix the graph compiled at {cap.site.short()}, then run scanprobe again"
                raise err from None
        return cap.built

    def realize(self, cap: Captured):
        if cap.function is None:
            cap.function = self.backend.realize(self.build(cap))
        return cap.function

    # ---------------------------------------------------------------- SP004
    def symbolic_args(self, args, kwargs) -> list:
        return [a for a in list(args) + list(kwargs.values()) if self.backend.is_variable(a)]

    def compiled_function_in_graph(self, cap, symbolic) -> UserCodeError:
        """SP004: a compiled function called on graph variables, explained in the user's names."""
        from scanprobe.rules import rule
        from scanprobe.rules.sp004_compiled_function_in_scan import (
            CompiledFunctionInScan,
        )

        frames = []
        for fs in traceback.extract_stack()[:-2]:
            if self.is_user_file(fs.filename):
                frames.append(Site(fs.filename, fs.lineno or 0, (fs.line or "").strip(), fs.name))
        caller = frames[-1] if frames else None
        # the name the module gave the function so far (the run is not over)
        bound = [n for n, v in bindings(self.module.__dict__ if self.module else {})
                 if isinstance(v, LazyFunction) and v._sp_captured is cap]
        name = bound[0] if bound else cap.label
        arg_names = []
        if caller is not None:
            try:
                for node in ast.walk(ast.parse(caller.code)):
                    if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == name.split(".")[-1]:
                        arg_names = [ast.unparse(a) for a in node.args]
                        break
            except SyntaxError:
                arg_names = []
        return rule(CompiledFunctionInScan).explain(
            name, cap.site, caller, arg_names, symbolic, self.backend.clone_code, frames
        )

    # ---------------------------------------------------------------- names
    def same_variable(self, a, b) -> bool:
        if a is b:
            return True
        ca, cb = getattr(a, "container", None), getattr(b, "container", None)
        return ca is not None and ca is cb

    def name_for_variable(self, var) -> str:
        key = id(getattr(var, "container", None) or var)
        return self._names.get(key, "")

    def _index_names(self):
        """Module-level names (and attributes of module-level objects) of graph variables."""
        if self.module is None:
            return
        g = self.module.__dict__

        def add(obj, name):
            if self.backend.is_variable(obj):
                key = id(getattr(obj, "container", None) or obj)
                self._names.setdefault(key, name)

        for name, obj in list(g.items()):
            if name.startswith("__"):
                continue
            add(obj, name)
        for name, obj in list(g.items()):
            d = getattr(obj, "__dict__", None)
            if isinstance(d, dict) and not isinstance(obj, (type, types.ModuleType)):
                for attr, val in list(d.items()):
                    add(val, f"{name}.{attr}")

    def user_site_from_trace(self, var) -> Site | None:
        """Innermost frame of the user's own code in a variable's creation trace."""
        trace = getattr(getattr(var, "tag", None), "trace", None)
        if not trace:
            return None
        for stack in trace:
            for entry in reversed(list(stack)):
                try:
                    filename, lineno, func, code = entry[0], entry[1], entry[2], entry[3]
                except (TypeError, IndexError):
                    filename, lineno, func, code = entry.filename, entry.lineno, entry.name, entry.line
                if self.is_user_file(filename):
                    return Site(filename, int(lineno), (code or "").strip(), func)
        return None

    def scan_call_at(self, site: Site | None) -> ScanCall | None:
        if site is None:
            return None
        for call in self.scan_calls:
            if os.path.realpath(call.site.file) == os.path.realpath(site.file) and call.site.line == site.line:
                return call
        return None

    # ---------------------------------------------------------------- run
    def run(self):
        """Run the module with the hooks installed; name what it compiled."""
        path = self.path
        if not path.exists():
            raise ScanprobeError(
                f"no such file: {path}", hint="give the path of a Python file, e.g. scanprobe inspect model.py"
            )
        if path.is_dir():
            raise ScanprobeError(f"{path} is a directory", hint="give one Python file (FILE[:TARGET])")
        try:  # bytes: Python decodes them as an import would (PEP 263), and refuses what it refuses
            code = compile(path.read_bytes(), str(path), "exec")
        except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes, before Python 3.12
            line = getattr(exc, "lineno", None)
            msg = getattr(exc, "msg", None) or str(exc)
            site = Site(str(path), line or 0, (getattr(exc, "text", None) or "").strip())
            raise ScanprobeError(
                f"{path.name}{f':{line}' if line else ''}: syntax error: {msg}",
                hint="fix the syntax error (or the file's encoding: Python reads UTF-8 unless a coding line says "
                     "otherwise); scanprobe runs your module as Python",
                frames=[site] if line else [],
            ) from None
        modname = path.stem if path.stem.isidentifier() and path.stem not in sys.modules else "__scanprobe_user__"
        module = types.ModuleType(modname)
        module.__file__ = str(path)
        self.module = module
        before = set(sys.modules)
        # what the module may change of the process, put back afterwards: its search path (a
        # module that clears sys.path left scanprobe unable to import its own reporters) and its
        # working directory (later relative paths are the user's, resolved where they started)
        saved_path, saved_cwd = list(sys.path), os.getcwd()
        sys.modules[modname] = module
        sys.path.insert(0, str(path.parent))
        self.backend.install_hooks(self)
        real_exit, real_posix_exit = os._exit, posix._exit
        os._exit = posix._exit = _exit_raises  # the user's os._exit ends the module, not scanprobe
        try:
            # what the module prints goes to stderr: stdout carries scanprobe's report (JSON, SARIF)
            with user_output_to_stderr():
                exec(code, module.__dict__)
        except (KeyboardInterrupt, Timeout, ScanprobeError):
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure of user code is reported
            raise _user_error(self, exc, f"running {path.name} raised") from None
        finally:
            os._exit, posix._exit = real_exit, real_posix_exit
            self.backend.remove_hooks()
            sys.path[:] = saved_path
            try:
                os.chdir(saved_cwd)
            except OSError:
                pass
            # the user's module and the modules it imported from its own folder are not kept:
            # a second analysis in this process (tests, the pytest plugin) runs them afresh
            for name in set(sys.modules) - before:
                mod = sys.modules.get(name)
                if name == modname or (mod is not None and self.is_user_file(getattr(mod, "__file__", "") or "")):
                    sys.modules.pop(name, None)
        self.name_functions(module.__dict__)
        return module

    def name_functions(self, namespace: dict) -> None:
        """Name each captured compile by the names binding it in ``namespace`` (one bound to the function
        itself first: ``train_function``, not ``rbm`` holding it; suffixes where two names collide)."""
        self._index_names()
        bound = bindings(namespace)
        for cap in self.functions:
            direct = {n for n, v in bound if _is_function_of(v, cap)}
            names = [n for n, v in bound if any(_is_function_of(w, cap) for w in wrapped(v))]
            cap.names = sorted(names, key=lambda n: (n not in direct, "[" in n, n))
        # two compiles that would get the same name (e.g. one line in a loop) get a suffix
        seen: dict[str, int] = {}
        for cap in self.functions:
            label = cap.label
            if label in seen or sum(1 for c in self.functions if c.label == label) > 1:
                seen[label] = seen.get(label, 0) + 1
                cap.names = [f"{label}#{seen[label]}"]
            else:
                seen[label] = 1

    def user_targets(self, include_library=False) -> list[Captured]:
        return [c for c in self.functions if c.origin in ("user", "framework", "model") or include_library]

    def skipped(self, include_library=False) -> list[Captured]:
        """Functions compiled by libraries for themselves (not analysed unless asked)."""
        return [] if include_library else [c for c in self.functions if c.origin == "library"]

    def module_inputs(self) -> dict:
        """The module's ``SCANPROBE_INPUTS``: a dict by name (``'x'``, ``'x#1'``, ``'#0'``), a list
        or tuple by position, or a callable returning either."""
        if self.module is None:
            return {}
        spec = self.module.__dict__.get("SCANPROBE_INPUTS")
        if spec is None:
            return {}
        if callable(spec):
            try:
                spec = spec()
            except Exception as exc:
                raise _user_error(self, exc, "SCANPROBE_INPUTS() raised") from None
        if isinstance(spec, (list, tuple)):  # by position: the i-th explicit input of each target
            return {f"#{i}": v for i, v in enumerate(spec)}
        if not isinstance(spec, dict):
            raise ScanprobeError(
                f"SCANPROBE_INPUTS in {self.path.name} is a {type(spec).__name__}, not a dict or a list",
                hint="set SCANPROBE_INPUTS = {'x': np.zeros((B, D))}, or a list of values by position "
                "(or a function returning either)",
            )
        return spec


def _is_function_of(value, cap) -> bool:
    return (isinstance(value, LazyFunction) and value._sp_captured is cap) or \
        (cap.function is not None and value is cap.function)


class UserExit(BaseException):
    """The user's module called ``os._exit`` while scanprobe ran it."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def user_output_to_stderr():
    """While user code runs, everything it writes to standard output goes to standard error:
    ``print`` (sys.stdout), ``sys.__stdout__.write`` and ``os.write(1, ...)`` and C code alike (file
    descriptor 1 is pointed at 2), so scanprobe's own stdout (JSON, SARIF) stays one document. A
    copy of the process the user's code forked ends here, before it could print a second one."""
    pid = os.getpid()
    for stream in (sys.stdout, sys.__stdout__):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no file descriptor 1 (or 2): only the Python-level redirection
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if os.getpid() != pid:  # a fork of the user's: it must not go on as a second scanprobe
            REAL_EXIT(0)
        try:
            if sys.__stdout__ is not None:
                sys.__stdout__.flush()  # the user's buffered writes, still to stderr
        except (OSError, ValueError):
            pass
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _exit_raises(code=0):
    raise UserExit(code)


def _user_error(session: CaptureSession, exc: BaseException, what: str) -> UserCodeError:
    frames = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if session.is_user_file(fs.filename):
            frames.append(Site(fs.filename, fs.lineno or 0, (fs.line or "").strip(), fs.name))
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    where = f" at {frames[-1].short()}" if frames else ""
    if isinstance(exc, (SystemExit, UserExit)):
        call = "SystemExit" if isinstance(exc, SystemExit) else "os._exit"
        text = f"{what} {call}({exc.code}){where}"
        hint = ("scanprobe runs your module as an import: nothing was analysed; move the exit under "
                "if __name__ == '__main__':")
    else:
        text = f"{what} {type(exc).__name__}{where}: {msg}"
        hint = f"fix the error in your code{where}, then run scanprobe again"
        if _ARRAY_LIKE_MSG in str(exc):
            hint = (
                "a compiled function was called on a symbolic variable (e.g. inside a scan step): "
                "build the graph with clone(cost, replace={x: x_t}) or OpFromGraph instead of calling it"
            )
    return UserCodeError(text, hint=hint, frames=frames)
