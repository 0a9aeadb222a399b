"""A recurrent state kept only to be averaged over time (SP006): a running sum in the step."""
import numpy as np
from _backend import T, th

rng = np.random.default_rng(0)
W = th.shared(rng.normal(size=(5, 4)) * 0.5, name="W")
U = th.shared(rng.normal(size=(4, 4)) * 0.5, name="U")
X = T.matrix("X", dtype="float64")


def step(x_t, h):
    return T.tanh(T.dot(x_t, W) + T.dot(h, U))


hs, _ = th.scan(step, sequences=[X], outputs_info=[T.zeros(4, dtype="float64")], name="encoder")
pooled = th.function([X], hs.mean(axis=0))

SCANPROBE_INPUTS = {"X": rng.normal(size=(30, 5))}
