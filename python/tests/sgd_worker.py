"""One rank of the equivalence tests (test_ferry.py): a linear model trained by ferry's
DistributedOptimizer on exact dyadic data, so that every summation order gives the same floats.
Worker 0 writes the final weights as JSON to argv[1]. Options (argv[4], JSON) go to the
DistributedOptimizer, but for "_steps" (run this many steps, default STEPS, from the step the
optimizer resumed at), "_save" (write a checkpoint after the last step), "_plugin" (load this ferry
plugin first, on every rank) and "_lr" (the SGD's lr instead of LR)."""
import json
import os
import signal
import sys

import torch

import ferry
import ferry.torch as ft

STEPS, BATCH, IN, OUT = 2, 64, 4, 4
LR, MOMENTUM = 1.0 / 64, 0.5


def global_batch(step):
    # Inputs and targets in {-1, 0, 1}: with weights in multiples of 1/8 every gradient is exact in
    # float32 (test_ferry.py), whatever the order of its sums.
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randint(-1, 2, (BATCH, IN), generator=g).float()
    t = torch.randint(-1, 2, (BATCH, OUT), generator=g).float()
    return x, t


def initial_weights():
    g = torch.Generator().manual_seed(7)
    w = torch.randint(-4, 5, (OUT, IN), generator=g).float() / 8  # multiples of 1/8 in [-1/2, 1/2]
    b = torch.randint(-4, 5, (OUT,), generator=g).float() / 8
    return w, b


def main():
    out, algo, topology = sys.argv[1], sys.argv[2], sys.argv[3]
    options = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    steps, save = options.pop("_steps", STEPS), options.pop("_save", False)
    gated = options.pop("_gate", False)  # pass model= (wfbp: updates complete in the next forward)
    finish = options.pop("_finish", True)  # False: leave finish() to ferry's exit handler
    lr = options.pop("_lr", LR)
    if "_plugin" in options:
        ferry.load_plugin(options.pop("_plugin"))  # before init(): the servers serve inside it
    ferry.init()
    torch.manual_seed(1000 + ferry.rank())  # a different init on every worker: broadcast must fix it
    model = torch.nn.Linear(IN, OUT)
    if ferry.rank() == 0:
        w, b = initial_weights()
        with torch.no_grad():
            model.weight.copy_(w)
            model.bias.copy_(b)
    ft.broadcast_parameters(model.state_dict(), root_rank=0)
    sgd = torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM)
    opt = ft.DistributedOptimizer(sgd, named_parameters=model.named_parameters(), algo=algo, topology=topology,
                                  model=model if gated else None, **options)
    n, r = ferry.size(), ferry.rank()
    per = BATCH // n
    kill_rank = int(os.environ.get("FERRY_TEST_KILL_RANK", "-1"))  # test_ferry.py: a worker that dies
    for step in range(opt.iterations, steps):
        if step == 1 and r == kill_rank:
            os.kill(os.getpid(), signal.SIGKILL)
        x, t = global_batch(step)
        x, t = x[r * per:(r + 1) * per], t[r * per:(r + 1) * per]
        opt.zero_grad()
        loss = 0.5 * ((model(x) - t) ** 2).sum() / per
        loss.backward()
        opt.step()
    if save:
        opt.save_checkpoint()
    overlapped = opt.overlaps_forward
    if finish:
        opt.finish()
    if r == 0:
        with open(out, "w") as f:
            json.dump({"weight": model.weight.tolist(), "bias": model.bias.tolist(), "metrics": opt.metrics(),
                       "overlapped": overlapped}, f)


if __name__ == "__main__":
    main()
