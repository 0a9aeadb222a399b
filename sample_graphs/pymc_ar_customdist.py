"""A PyMC AR(1) time series whose distribution is a scan in a CustomDist (PyMC derives its logp).

The module builds the model and compiles nothing. PyMC turns the generative scan into a
log-density scan over the observed series; given the data its steps are independent, so
scanprobe reports that scan as a map (SP002) in `model.logp`, and `scanprobe fix` vectorizes it.
In `model.logp_dlogp` the gradient's per-step outputs are read in full by the gradient: needed.

PYMC_AR_STEPS changes the length of the series.
"""

import os

import numpy as np
import pymc as pm
import pytensor
from pymc.pytensorf import collect_default_updates

T_STEPS = int(os.environ.get("PYMC_AR_STEPS", 500))
data = np.cumsum(np.random.default_rng(0).normal(size=T_STEPS)) * 0.1


def ar_dist(x0, rho, sigma, size):
    def ar_step(x_prev, rho, sigma):
        x = rho * x_prev + pm.Normal.dist(sigma=sigma)
        return x, collect_default_updates([x])

    xs = pytensor.scan(ar_step, outputs_info=[x0], non_sequences=[rho, sigma], n_steps=T_STEPS, strict=True)[0]
    return xs


with pm.Model() as ar_model:
    rho = pm.Normal("rho", 0, 0.5)
    sigma = pm.HalfNormal("sigma", 1)
    x0 = pm.Normal("x0", 0, 1)
    series = pm.CustomDist("series", x0, rho, sigma, dist=ar_dist, observed=data)
