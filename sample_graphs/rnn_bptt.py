"""An Elman RNN trained by backpropagation through time: its forward history is needed.

The hidden states of every step are read twice after the forward scan: by the loss (all steps
are scored) and by the backward scan, which needs h[t-1] at every step. That full-length buffer
is the price of BPTT, not waste; the gradient accumulators of the weights are not needed in full
and shrink in FAST_RUN. It is compiled without the `more_mem` rewrites, so the weight gradients
accumulate in the backward scan instead of keeping every step's terms (SP008).
"""

import numpy as np

from _backend import T, floatX, th

STEPS, BATCH, N_IN, N_HID = 50, 16, 8, 32

x = T.tensor3("x", dtype=floatX)  # (steps, batch, n_in)
y = T.tensor3("y", dtype=floatX)  # (steps, batch, 1)
rng = np.random.default_rng(1)
W_in = th.shared((0.1 * rng.standard_normal((N_IN, N_HID))).astype(floatX), name="W_in")
W_rec = th.shared((0.1 * rng.standard_normal((N_HID, N_HID))).astype(floatX), name="W_rec")
W_out = th.shared((0.1 * rng.standard_normal((N_HID, 1))).astype(floatX), name="W_out")
h0 = T.zeros((x.shape[1], N_HID), dtype=floatX)


def step(x_t, h_prev, W_in, W_rec):
    return T.tanh(T.dot(x_t, W_in) + T.dot(h_prev, W_rec))


h = th.scan(step, sequences=[x], outputs_info=[h0], non_sequences=[W_in, W_rec])[0]
loss = T.mean((T.dot(h, W_out) - y) ** 2)
params = [W_in, W_rec, W_out]
grads = T.grad(loss, params)
lr = np.asarray(0.1, dtype=floatX)
# the default rewrites but those that move the weight gradients' products out of the backward
# scan (tagged `more_mem`): each gradient accumulates in the loop (SP008)
mode = th.compile.mode.get_mode("FAST_RUN").excluding("more_mem")
train_step = th.function([x, y], loss, updates=[(p, p - lr * g) for p, g in zip(params, grads)], mode=mode)

SCANPROBE_INPUTS = {
    "x": rng.standard_normal((STEPS, BATCH, N_IN)).astype(floatX),
    "y": rng.standard_normal((STEPS, BATCH, 1)).astype(floatX),
}

if __name__ == "__main__":
    for epoch in range(5):
        print(epoch, train_step(SCANPROBE_INPUTS["x"], SCANPROBE_INPUTS["y"]))
