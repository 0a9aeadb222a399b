"""PyMC models as targets (issue 14): a module that builds a model and compiles nothing is analysed
as the samplers would compile it, sized at the model's initial point, on each PyMC the leg has."""

import pytest
from conftest import FIXTURES, SAMPLES, scanprobe
from helpers import buffers, findings

pytest.importorskip("pymc")

GARCH = SAMPLES / "pymc_garch.py"
AR = SAMPLES / "pymc_ar_customdist.py"
STEPS, SERIES = 2000, 64


def _line(path, text):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_sampler_functions_found_sized_and_named(backend):
    res = scanprobe("inspect", GARCH, "--format", "json")
    assert res.rc == 1, res
    rep = res.json()
    names = [t["name"] for t in rep["targets"]]
    assert names == ["model.logp_dlogp", "model.logp"], names
    model_line = _line(GARCH, "with pm.Model() as model:")
    for t in rep["targets"]:
        assert t["site"]["line"] == model_line
        sized = buffers(rep, t["name"])
        assert sized and all(b["bytes"] is not None for b in sized), sized  # nothing left as a formula
    assert any("initial point" in n for n in rep["notes"])
    # the per-step log-likelihoods, kept only to be summed: SP006 in both functions
    sp006 = findings(rep, "SP006")
    assert all(f["message"].startswith("per-step output `loglik`") for f in sp006), sp006
    assert {f["target"] for f in sp006} == {"model.logp_dlogp", "model.logp"}
    assert all(f["bytes"] == (STEPS - 1) * SERIES * 8 for f in sp006)
    assert all(f["site"]["line"] in (_line(GARCH, "pytensor.scan("), _line(GARCH, "logliks.sum()")) for f in sp006)
    # the variances are a recurrent state the gradient needs, named by the step's argument
    grad = [b for b in buffers(rep, "model.logp_dlogp") if "var_prev" in b["belongs_to"]]
    assert grad and grad[0]["verdict"] == "needed" and grad[0]["bytes"] == STEPS * SERIES * 8


def test_custom_dist_scan_is_a_map_in_the_log_density(backend):
    res = scanprobe("inspect", AR, "--format", "json")
    assert res.rc == 1, res
    rep = res.json()
    assert [t["name"] for t in rep["targets"]] == ["ar_model.logp_dlogp", "ar_model.logp", "ar_model.forward"]
    sp002 = findings(rep, "SP002")
    logp_rows = buffers(rep, "ar_model.logp")
    assert [b["belongs_to"] for b in logp_rows] == ["per-step output `series_logprob`"], logp_rows  # PyMC's name
    assert [f["target"] for f in sp002] == ["ar_model.logp"]
    assert sp002[0]["site"]["line"] == _line(AR, "pytensor.scan(")
    for t in rep["targets"]:
        assert all(b["bytes"] is not None for b in buffers(rep, t["name"]))
    # the forward (posterior-predictive) graph draws the series with the user's generative scan
    (state,) = buffers(rep, "ar_model.forward")
    assert "x_prev" in state["belongs_to"] and state["bytes"] == (500 + 1) * 8
    inputs = {i["label"]: i["source"] for i in rep["targets"][2]["inputs"]}
    assert {inputs[k] for k in ("x0", "rho", "sigma")} == {"initial point"}, inputs


def test_a_model_named_selects_its_functions_and_a_factory_is_called(backend):
    res = scanprobe("inspect", f"{GARCH}:model.logp", "--format", "json")
    assert [t["name"] for t in res.json()["targets"]] == ["model.logp"]
    res = scanprobe("inspect", f"{FIXTURES / 'pymc_factory.py'}:build_model", "--format", "json")
    assert res.rc in (0, 1), res
    rep = res.json()
    assert [t["name"] for t in rep["targets"]] == ["build_model.logp_dlogp", "build_model.logp", "build_model.forward"]
    assert rep["targets"][0]["site"]["line"] == _line(FIXTURES / "pymc_factory.py", "def build_model")
    level = [b for b in buffers(rep, "build_model.logp") if b["role"] == "sit_sot"]
    assert level and level[0]["bytes"] == (300 + 1) * 8 and level[0]["verdict"] == "needed"


def test_profile_measures_what_was_predicted(backend):
    res = scanprobe("profile", f"{GARCH}:model.logp", "--format", "json",
                    env={"PYMC_GARCH_STEPS": "500", "PYMC_GARCH_SERIES": "16"})
    assert res.rc in (0, 1), res
    prof = res.json()
    (t,) = prof["targets"]
    rows = t["profile"]["buffers"]
    assert rows and t["gaps"] == [], t
    for b in rows:
        assert b["predicted_bytes"] and b["measured_bytes"], b
        assert abs(b["measured_bytes"] - b["predicted_bytes"]) <= 0.05 * b["predicted_bytes"], b


def test_fix_accumulates_the_log_likelihood_and_verifies(backend):
    res = scanprobe("fix", f"{GARCH}:model.logp", "--format", "json",
                    env={"PYMC_GARCH_STEPS": "300", "PYMC_GARCH_SERIES": "8"})
    assert res.rc == 0, res
    out = res.json()
    (fix,) = out["fixes"]
    assert fix["status"] == "verified" and fix["outputs_equal"], fix
    assert any(r["rule"] == "SP006" and r["form"] == "accumulated" for r in fix["rewrites"]), fix
    assert fix["after"]["remaining"] == {"SP006": 0}
    assert fix["after"]["predicted_peak"] < fix["before"]["predicted_peak"]


def test_functions_the_module_has_pymc_compile_are_its_own_targets(backend):
    path = FIXTURES / "pymc_user_compiles.py"
    rep = scanprobe("inspect", path, "--format", "json").json()
    names = [t["name"] for t in rep["targets"]]
    assert names[0] == "logp_fn" and set(names[1:]) == {"m.logp_dlogp", "m.logp", "m.forward"}, names
    own = rep["targets"][0]
    assert own["site"]["line"] == _line(path, "logp_fn = m.compile_logp()")
    assert [(i["label"], i["source"]) for i in own["inputs"]] == [("d", "initial point of m")]
    assert [b["bytes"] for b in buffers(rep, "logp_fn")] == [(50 + 1) * 8]


def test_kalman_filter_tapes_are_zero_fed_and_fixed(backend):
    """A Kalman filter's logp gradient (issue 26): the tapes of the filtered mean and variance are
    fed zeros (the loss reads only the per-step log-likelihoods); the fix makes them running
    states, verified by rerunning."""
    path = FIXTURES / "pymc_kalman.py"
    rep = scanprobe("inspect", f"{path}:model.logp_dlogp", "--format", "json").json()
    tapes = findings(rep, "SP007")
    assert sorted(f["message"].split("`")[1] for f in tapes) == ["P", "m"], tapes
    assert all(f["bytes"] == 301 * 8 for f in tapes)
    res = scanprobe("fix", f"{path}:model.logp_dlogp", "--runs", "1", "--format", "json")
    (f,) = res.json()["fixes"]
    assert f["status"] == "verified" and f["after"]["remaining"]["SP007"] == 0, f
    assert "running tape" in [r["form"] for r in f["rewrites"] if r["rule"] == "SP007"]
