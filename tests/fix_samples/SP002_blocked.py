"""A map whose step slices a window that grows with the step: SP002 names the slice, no rewrite."""
import numpy as np
from _backend import T, th

rng = np.random.default_rng(0)
x = T.vector("x", dtype="float64")


def prefix_mean(i):
    return x[: i + 1].mean()


means, _ = th.scan(prefix_mean, sequences=[T.arange(x.shape[0])], name="prefix")
f = th.function([x], means)

SCANPROBE_INPUTS = {"x": rng.normal(size=12)}
