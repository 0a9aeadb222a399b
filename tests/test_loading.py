"""Running the user's module: isolation, naming, one compile per target."""

import subprocess
import sys
import textwrap

from conftest import COMPILE_CACHE, FIXTURES, ROOT, child_env, scanprobe
from helpers import findings


def test_main_block_does_not_run_and_module_calls_work(backend, tmp_path):
    marker = tmp_path / "ran"
    res = scanprobe("inspect", FIXTURES / "main_guard.py", "--format", "json", env={"MAIN_MARKER": marker})
    assert res.rc == 0, res
    assert not marker.exists()
    labels = [i["label"] for i in res.json()["targets"][0]["inputs"]]
    assert labels == ["x#0", "x#1", "#2"]


def test_each_target_is_optimized_once_in_the_analysed_mode(backend):
    """A module-level call of the function and the analysis share one optimization."""
    script = textwrap.dedent(
        f"""
        import sys
        from scanprobe.backends import get_backend
        from scanprobe.loading import CaptureSession
        b = get_backend({backend!r}); b.load([])
        made = []
        orig = b.api.FunctionMaker.__init__
        def counting(self, *a, **k):
            made.append(1)
            return orig(self, *a, **k)
        b.api.FunctionMaker.__init__ = counting
        s = CaptureSession({str(FIXTURES / 'main_guard.py')!r}, b, mode_override="FAST_COMPILE")
        s.run()                      # the module calls f() once: built and linked here
        cap = s.functions[0]
        s.build(cap)                 # the analysis asks again: no new optimization
        print(len(made), cap.built.mode_label, cap.function is not None)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=child_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "FAST_COMPILE", "True"]


def test_targets_named_by_binding_or_line(backend):
    res = scanprobe("inspect", FIXTURES / "two_targets.py", "--format", "json")
    names = [t["name"] for t in res.json()["targets"]]
    assert names == ["total", "registry['history']", "two_targets.py:9"]
    one = scanprobe("inspect", f"{FIXTURES / 'two_targets.py'}:total", "--format", "json")
    assert [t["name"] for t in one.json()["targets"]] == ["total"]
    by_line = scanprobe("inspect", f"{FIXTURES / 'two_targets.py'}:9", "--format", "json")
    assert [t["name"] for t in by_line.json()["targets"]] == ["two_targets.py:9"]


def test_same_line_compiled_twice_gets_distinct_names(backend, tmp_path):
    (tmp_path / "_backend.py").write_text((FIXTURES / "_backend.py").read_text())
    (tmp_path / "loop.py").write_text(
        "from _backend import T, th\n"
        "x = T.vector('x')\n"
        "made = []\n"
        "for mode in ['FAST_COMPILE', 'FAST_COMPILE']:\n"
        "    made.append(th.function([x], x.sum(), mode=mode))\n"
        "def build():\n"
        "    return th.function([x], x * 2)\n"
        "build(); build()\n"
    )
    rep = scanprobe("inspect", tmp_path / "loop.py", "--format", "json").json()
    assert [t["name"] for t in rep["targets"]] == ["made[0]", "made[1]", "loop.py:7#1", "loop.py:7#2"]


def test_a_name_bound_to_the_function_wins_over_an_object_holding_it(backend, tmp_path):
    """`train_function = rbm.train_function` names the target, not `rbm` (the RNN-RBM tutorial's
    class holds both of its functions)."""
    (tmp_path / "_backend.py").write_text((FIXTURES / "_backend.py").read_text())
    (tmp_path / "holder.py").write_text(
        "from _backend import T, th\n"
        "x = T.vector('x')\n"
        "class Model:\n"
        "    def __init__(self):\n"
        "        self.train_function = th.function([x], x.sum())\n"
        "        self.generate_function = th.function([x], x * 2)\n"
        "rbm = Model()\n"
        "train_function = rbm.train_function\n"
    )
    rep = scanprobe("inspect", tmp_path / "holder.py", "--format", "json").json()
    assert [t["name"] for t in rep["targets"]] == ["train_function", "rbm"]


def test_user_mode_is_kept_unless_overridden(backend):
    rep = scanprobe("inspect", FIXTURES / "two_targets.py", "--format", "json").json()
    modes = {t["name"]: t["mode"]["name"] for t in rep["targets"]}
    assert modes["total"] == "FAST_COMPILE"
    assert modes["registry['history']"].startswith("default")
    rep = scanprobe("inspect", FIXTURES / "two_targets.py", "--mode", "FAST_RUN", "--format", "json").json()
    assert {t["mode"]["name"] for t in rep["targets"]} == {"FAST_RUN"}
    assert all(t["mode"]["from_cli"] for t in rep["targets"])
    assert findings(rep) == []


def test_theano_flags_of_the_user_are_kept(backend):
    if backend != "theano":
        return  # the flag handling is Theano's alone; PyTensor needs none
    res = scanprobe(
        "inspect", FIXTURES / "two_targets.py", "--format", "json",
        env={"THEANO_FLAGS": f"base_compiledir={COMPILE_CACHE},floatX=float32"},
    )
    assert res.rc == 1, res
    note = " ".join(res.json()["notes"])
    assert "blas.ldflags=" in note and "your own THEANO_FLAGS are kept" in note


def _step_two(r_prev, var_prev):
    var = var_prev + r_prev
    loglik = -var
    return var, loglik


def _step_updates(x_prev):
    x = x_prev + 1
    return x, {}


def _step_grouped(x_prev):
    x = x_prev + 1
    return (x, x * 2), {}


def _step_expr(x_prev):
    return x_prev + 1


def test_per_step_outputs_named_by_what_the_step_returns():
    from scanprobe.records import Site
    from scanprobe.scancalls import ScanCall

    def call(fn, outputs_info):
        return ScanCall(Site("m.py", 1, ""), fn, [], outputs_info, [], None)

    two = call(_step_two, [object(), None])
    assert two.returned_names() == ["var", "loglik"] and two.output_name(0) == "loglik"
    assert call(_step_updates, [object()]).returned_names() == ["x"]
    grouped = call(_step_grouped, [object(), None])
    assert grouped.returned_names() == ["x", ""] and grouped.output_name(0) == ""
    assert call(_step_expr, []).output_name(0) == ""
    assert call(lambda a: a, []).returned_names() == []
