"""A map (SP002) beside a recurrent scan in one function: only the map is vectorized."""
import numpy as np
from _backend import T, th

rng = np.random.default_rng(0)
W = th.shared(rng.normal(size=(4, 3)), name="W")
b = th.shared(rng.normal(size=3), name="b")
R = th.shared(rng.normal(size=(3, 3)) * 0.3, name="R")
X = T.matrix("X", dtype="float64")
Y = T.matrix("Y", dtype="float64")  # another length: the backend does not merge the two scans


def squash(x_t):
    return T.tanh(T.dot(x_t, W) + b)


def carry(x_t, h):
    return T.tanh(T.dot(x_t, W) + T.dot(h, R))


rows, _ = th.scan(squash, sequences=[X], name="rows")
hs, _ = th.scan(carry, sequences=[Y], outputs_info=[T.zeros(3, dtype="float64")], name="carry")
f = th.function([X, Y], [rows.sum(axis=0), hs[-1]])

SCANPROBE_INPUTS = {"X": rng.normal(size=(9, 4)), "Y": rng.normal(size=(6, 4))}
