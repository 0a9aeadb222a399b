"""A GRU classifier trained on its last state (SP007): the gradient scan's tape of `h` is fed by the
loss at one step only."""
import numpy as np
from _backend import T, th

rng = np.random.default_rng(3)
N_IN, N_HID = 3, 5
Wz = th.shared(rng.normal(size=(N_IN + N_HID, N_HID)) * 0.4, name="Wz")
Wh = th.shared(rng.normal(size=(N_IN + N_HID, N_HID)) * 0.4, name="Wh")
w_out = th.shared(rng.normal(size=N_HID), name="w_out")
X = T.tensor3("X", dtype="float64")  # (steps, batch, n_in)
y = T.vector("y", dtype="float64")


def gru(x_t, h):
    xh = T.concatenate([x_t, h], axis=1)
    z = 1 / (1 + T.exp(-T.dot(xh, Wz)))
    return (1 - z) * h + z * T.tanh(T.dot(xh, Wh))


hs, _ = th.scan(gru, sequences=[X], outputs_info=[T.zeros((X.shape[1], N_HID), dtype="float64")], name="gru")
loss = T.mean((T.dot(hs[-1], w_out) - y) ** 2)
params = [Wz, Wh, w_out]
train = th.function([X, y], loss, updates=[(p, p - 0.1 * g) for p, g in zip(params, T.grad(loss, params))])

SCANPROBE_INPUTS = {"X": rng.normal(size=(40, 4, N_IN)), "y": rng.normal(size=4)}
