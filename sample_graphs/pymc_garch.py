"""A PyMC model of 64 return series with GARCH(1,1) volatility, its likelihood a scan in a Potential.

The module builds the model and compiles nothing: `pm.sample` would compile the log-density and
its gradient. scanprobe compiles what the sampler would (`model.logp_dlogp`, `model.logp`) with
the inputs at the model's initial point, and finds the per-step log-likelihoods (2000 steps x 64
series, float64) kept only to be summed (SP006): `scanprobe fix` carries the sum in the step.
The conditional variances are a recurrent state the gradient needs (kept, with the memory
scan_checkpoints would keep instead).

PYMC_GARCH_STEPS and PYMC_GARCH_SERIES change the sizes.
"""

import os

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

T_STEPS = int(os.environ.get("PYMC_GARCH_STEPS", 2000))
N_SERIES = int(os.environ.get("PYMC_GARCH_SERIES", 64))
returns = np.random.default_rng(0).normal(0, 1, (T_STEPS, N_SERIES))


def garch_step(r_prev, r_now, var_prev, omega, alpha, beta):
    var = omega + alpha * r_prev ** 2 + beta * var_prev
    loglik = -0.5 * (np.log(2 * np.pi) + pt.log(var) + r_now ** 2 / var)
    return var, loglik


with pm.Model() as model:
    omega = pm.HalfNormal("omega", 0.2, shape=N_SERIES)
    alpha = pm.Beta("alpha", 2, 8, shape=N_SERIES)
    beta = pm.Beta("beta", 8, 2, shape=N_SERIES)
    var0 = pt.as_tensor(returns.var(axis=0))
    (variances, logliks), _ = pytensor.scan(
        garch_step,
        sequences=[dict(input=pt.as_tensor(returns), taps=[-1, 0])],
        outputs_info=[var0, None],
        non_sequences=[omega, alpha, beta],
    )
    pm.Potential("garch_loglik", logliks.sum())
