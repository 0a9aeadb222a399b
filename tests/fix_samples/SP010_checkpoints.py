"""A masked RNN classifier trained on its last state, under a budget (SP010; run with the options
in SP010_checkpoints.args: --max-buffer 4kB). The forward history (61 rows of 4 x 6 float64, 11.7 kB)
is read by the backward pass, so only checkpoints shrink it: 8 segments of 7 steps and a tail."""
import numpy as np
from _backend import T, th

rng = np.random.default_rng(4)
N_IN, N_HID = 3, 6
W = th.shared(rng.normal(size=(N_IN, N_HID)) * 0.4, name="W")
U = th.shared(rng.normal(size=(N_HID, N_HID)) * 0.4, name="U")
w_out = th.shared(rng.normal(size=N_HID), name="w_out")
X = T.tensor3("X", dtype="float64")  # (steps, batch, n_in)
M = T.matrix("M", dtype="float64")  # (steps, batch): 1 where the sequence has a value
y = T.vector("y", dtype="float64")


def step(x_t, m_t, h, W, U):
    new = T.tanh(T.dot(x_t, W) + T.dot(h, U))
    return m_t[:, None] * new + (1 - m_t[:, None]) * h


hs = th.scan(step, sequences=[X, M], outputs_info=[T.zeros((X.shape[1], N_HID), dtype="float64")],
             non_sequences=[W, U], name="masked_rnn")[0]
loss = T.mean((T.dot(hs[-1], w_out) - y) ** 2)
params = [W, U, w_out]
train = th.function([X, M, y], loss, updates=[(p, p - 0.1 * g) for p, g in zip(params, T.grad(loss, params))])

mask = (np.arange(60)[:, None] < rng.integers(40, 61, size=4)[None, :]).astype("float64")
SCANPROBE_INPUTS = {"X": rng.normal(size=(60, 4, N_IN)), "M": mask, "y": rng.normal(size=4)}
