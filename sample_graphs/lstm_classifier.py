"""An LSTM sequence classifier trained on its last state: the gradient keeps two tapes it barely reads.

The loss reads the hidden state `h` only at the last step and the cell `c` never (only through
`h`). The gradient scan still keeps a backward tape of steps + 1 rows for each of them (SP007):
the loss's cotangent is zero on every row but the first the backward pass runs, so only the
running value of each tape is ever read. The forward history itself is needed (the backward pass
reads h[t-1] and c[t-1] at every step). `scanprobe fix` rewrites the tapes as running states.
"""

import os

import numpy as np

from _backend import T, th

STEPS, BATCH, N_IN, N_HID = int(os.environ.get("LSTM_STEPS", 400)), 16, 8, 32
floatX = "float64"

x = T.tensor3("x", dtype=floatX)  # (steps, batch, n_in)
y = T.vector("y", dtype=floatX)  # (batch,): one label per sequence
rng = np.random.default_rng(7)
W = th.shared((0.1 * rng.standard_normal((N_IN, 4 * N_HID))).astype(floatX), name="W")
U = th.shared((0.1 * rng.standard_normal((N_HID, 4 * N_HID))).astype(floatX), name="U")
b = th.shared(np.zeros(4 * N_HID, dtype=floatX), name="b")
w_out = th.shared((0.1 * rng.standard_normal(N_HID)).astype(floatX), name="w_out")
h0 = T.zeros((x.shape[1], N_HID), dtype=floatX)
c0 = T.zeros((x.shape[1], N_HID), dtype=floatX)


def sigmoid(z):
    return 1 / (1 + T.exp(-z))


def lstm_step(x_t, h_prev, c_prev):
    z = T.dot(x_t, W) + T.dot(h_prev, U) + b
    i, f, o = sigmoid(z[:, :N_HID]), sigmoid(z[:, N_HID:2 * N_HID]), sigmoid(z[:, 2 * N_HID:3 * N_HID])
    c = f * c_prev + i * T.tanh(z[:, 3 * N_HID:])
    return o * T.tanh(c), c


(h, c) = th.scan(lstm_step, sequences=[x], outputs_info=[h0, c0])[0]
score = T.dot(h[-1], w_out)  # the classifier reads the last state only
loss = T.mean((score - y) ** 2)
params = [W, U, b, w_out]
grads = T.grad(loss, params)
lr = np.asarray(0.1, dtype=floatX)
train_step = th.function([x, y], loss, updates=[(p, p - lr * g) for p, g in zip(params, grads)])

SCANPROBE_INPUTS = {
    "x": rng.standard_normal((STEPS, BATCH, N_IN)).astype(floatX),
    "y": rng.standard_normal(BATCH).astype(floatX),
}

if __name__ == "__main__":
    for epoch in range(3):
        print(epoch, train_step(SCANPROBE_INPUTS["x"], SCANPROBE_INPUTS["y"]))
