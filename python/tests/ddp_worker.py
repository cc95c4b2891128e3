"""One rank of the DDP hook tests (test_ferry.py): the exact-data linear model of sgd_worker.py under
torch's DistributedDataParallel (gloo), plain or with ferry's codec hook, or under ferry's own
DistributedOptimizer, momentum 0. Mode "hook:SPEC" uses DDP's group, "hook@LINK:SPEC" ferry's
workers through the emulated LINK. Rank 0 writes the final weights as JSON to argv[1]."""
import json
import os
import sys

import torch
import torch.distributed as dist

import sgd_worker as w


def main():
    out, mode, store = sys.argv[1], sys.argv[2], sys.argv[3]
    rank, world = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
    model = torch.nn.Linear(w.IN, w.OUT)
    wt, b = w.initial_weights()
    with torch.no_grad():
        model.weight.copy_(wt)
        model.bias.copy_(b)
    if mode.startswith("ferry:"):  # ferry's S-SGD with this codec, for the hook to equal
        import ferry
        import ferry.torch as ft
        ferry.init()
        net = model
        opt = ft.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=w.LR), algo="ssgd",
                                      topology="allreduce", codec=mode[len("ferry:"):])
    else:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
        net = torch.nn.parallel.DistributedDataParallel(model)
        if mode.startswith("hook"):
            import ferry
            import ferry.torch.hooks
            where, spec = mode.split(":", 1)
            link = where[len("hook@"):] if where.startswith("hook@") else None
            if link:
                ferry.init()
            net.register_comm_hook(None, ferry.torch.hooks.compress(spec, link=link))
        opt = torch.optim.SGD(model.parameters(), lr=w.LR)
    per = w.BATCH // world
    for step in range(w.STEPS):
        x, t = w.global_batch(step)
        x, t = x[rank * per:(rank + 1) * per], t[rank * per:(rank + 1) * per]
        opt.zero_grad()
        (0.5 * ((net(x) - t) ** 2).sum() / per).backward()
        opt.step()
    if hasattr(opt, "finish"):
        opt.finish()
    if rank == 0:
        with open(out, "w") as f:
            result = {"weight": model.weight.tolist(), "bias": model.bias.tolist()}
            if mode.startswith("hook@"):
                result["link_bytes_sent"] = ferry._C.link_bytes_sent(link)
            json.dump(result, f)


if __name__ == "__main__":
    main()
