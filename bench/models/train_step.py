"""Training steps for bench/bench_checkpoint.py: an LSTM or a GRU classifier (loss on the last
state) over BENCH_STEPS steps, batch 16, float64, written one of two ways (BENCH_FORM):

- ``scan``: as users write it (``scan`` over the steps, ``grad`` of the loss);
- ``checkpoints``: the same step under the backend's own ``scan_checkpoints`` with
  ``save_every_N`` the divisor of the steps nearest sqrt(steps) (no padding), written by hand:
  the anchor for ``fix --max-buffer``.

BENCH_CELL chooses lstm (32 units, 8 inputs) or gru (64 units, 8 inputs).
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_graphs"))
from _backend import T, th  # noqa: E402

STEPS = int(os.environ.get("BENCH_STEPS", 1000))
FORM = os.environ.get("BENCH_FORM", "scan")
CELL = os.environ.get("BENCH_CELL", "lstm")
BATCH, N_IN = 16, 8
N_HID = 32 if CELL == "lstm" else 64
GATES = 4 if CELL == "lstm" else 3
floatX = "float64"
rng = np.random.default_rng(11)
x = T.tensor3("x", dtype=floatX)
y = T.vector("y", dtype=floatX)
W = th.shared((0.1 * rng.standard_normal((N_IN, GATES * N_HID))).astype(floatX), name="W")
U = th.shared((0.1 * rng.standard_normal((N_HID, GATES * N_HID))).astype(floatX), name="U")
b = th.shared(np.zeros(GATES * N_HID, dtype=floatX), name="b")
w_out = th.shared((0.1 * rng.standard_normal(N_HID)).astype(floatX), name="w_out")
h0 = T.zeros((x.shape[1], N_HID), dtype=floatX)


def sigmoid(z):
    return 1 / (1 + T.exp(-z))


def lstm_step(x_t, h_prev, c_prev, W, U, b):
    z = T.dot(x_t, W) + T.dot(h_prev, U) + b
    i, f, o = sigmoid(z[:, :N_HID]), sigmoid(z[:, N_HID:2 * N_HID]), sigmoid(z[:, 2 * N_HID:3 * N_HID])
    c = f * c_prev + i * T.tanh(z[:, 3 * N_HID:])
    return o * T.tanh(c), c


def gru_step(x_t, h_prev, W, U, b):
    zx = T.dot(x_t, W) + b
    zu = T.dot(h_prev, U[:, :2 * N_HID])
    zr = sigmoid(zx[:, :2 * N_HID] + zu)
    z, r = zr[:, :N_HID], zr[:, N_HID:]
    cand = T.tanh(zx[:, 2 * N_HID:] + T.dot(r * h_prev, U[:, 2 * N_HID:]))
    return (1 - z) * h_prev + z * cand


step = lstm_step if CELL == "lstm" else gru_step
init = [h0, T.zeros_like(h0)] if CELL == "lstm" else [h0]
if FORM == "checkpoints":
    if th.__name__ == "theano":
        from theano import scan_checkpoints
    else:
        scan_checkpoints = __import__(f"{th.__name__}.scan.checkpoints", fromlist=["x"]).scan_checkpoints
    # save_every_N: the divisor of the steps nearest sqrt(steps), so that no padding is needed
    # (Theano 1.0.5's padding fails on a 3-d sequence)
    EVERY = min((d for d in range(1, STEPS + 1) if STEPS % d == 0), key=lambda d: abs(d - math.sqrt(STEPS)))
    out = scan_checkpoints(step, sequences=[x], outputs_info=init, non_sequences=[W, U, b],
                           save_every_N=EVERY, padding=False)[0]
else:
    out = th.scan(step, sequences=[x], outputs_info=init, non_sequences=[W, U, b])[0]
h = out[0] if isinstance(out, (list, tuple)) else out
loss = T.mean((T.dot(h[-1], w_out) - y) ** 2)
params = [W, U, b, w_out]
train_step = th.function([x, y], loss, updates=[(p, p - 0.1 * g) for p, g in zip(params, T.grad(loss, params))])

SCANPROBE_INPUTS = {
    "x": rng.standard_normal((STEPS, BATCH, N_IN)).astype(floatX),
    "y": rng.standard_normal(BATCH).astype(floatX),
}
