"""A structural time-series model (pymc-extras statespace): local linear trend, 12-period
seasonality, measurement error, 120 monthly observations; the Kalman filter is a scan."""
import warnings

import numpy as np
import pymc as pm
from pymc_extras.statespace import structural as st

warnings.filterwarnings("ignore")
LevelTrend = getattr(st, "LevelTrend", None) or st.LevelTrendComponent
rng = np.random.default_rng(0)
T = 120
y = (np.cumsum(rng.normal(0.1, 1.0, T)) + 3 * np.sin(2 * np.pi * np.arange(T) / 12))[:, None]

components = (LevelTrend(order=2, innovations_order=[0, 1]) + st.TimeSeasonality(season_length=12, innovations=True)
              + st.MeasurementError())
ss_mod = components.build(verbose=False)

with pm.Model(coords=ss_mod.coords) as model:
    for name in ss_mod.param_names:
        info = ss_mod.param_info[name]
        shape, dims = info["shape"], info.get("dims")
        kw = {"dims": dims} if dims else {"shape": shape}
        if "Positive" in str(info.get("constraints")):
            pm.Gamma(name, 2, 10, **kw)
        else:
            pm.Normal(name, 0, 1, **kw)
    ss_mod.build_statespace_graph(y)
