#!/usr/bin/python3
"""One rank of bench/python/run.sh: a model trained on Fashion-MNIST by ferry from Python
(ferry.torch.DistributedOptimizer) or by PyTorch DDP (gloo; optionally with ferry's codec hook,
over DDP's group or, with --link, over ferry's emulated link). Launched by `ferry run --np N`.

Every system trains on the same batches (ferry.data.ShardedLoader: ferry train's order), from the
same initial weights, with SGD (--lr, --momentum). Timing: samples/s = steps * batch * workers /
training seconds from the first step to the last, evaluation excluded (the definition ferry train's
summary uses). Every --eval-every steps every worker evaluates its model on the first --eval-items
test items (all workers pause alike); the first evaluation at or above --target gives the time to
target. Worker 0 writes one JSON object to --out.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import ferry
import ferry.data
import ferry.torch as ft
import ferry.torch.hooks


def make_model(name):
    if name == "cnn":  # ferry train's cnn (src/train/models/cnn.cc)
        return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "resnet18":
        import torchvision
        m = torchvision.models.resnet18(num_classes=10)
        m.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
        return m
    sys.exit(f"bench_train.py: unknown model '{name}' (cnn, resnet18)")


def accuracy(model, x, y):
    was = model.training
    model.eval()
    with torch.no_grad():
        right = sum((model(x[i:i + 500]).argmax(1) == y[i:i + 500]).sum().item() for i in range(0, len(y), 500))
    model.train(was)
    return right / len(y)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--system", choices=["ferry", "ddp"], required=True)
    p.add_argument("--algo", default="ssgd")
    p.add_argument("--topology", default="")
    p.add_argument("--codec", default="")
    p.add_argument("--hook", default=None, help="ddp: ferry codec spec of the comm hook")
    p.add_argument("--link", default=None, help="ddp: the hook's traffic through ferry's emulated link")
    p.add_argument("--model", default="cnn")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-items", type=int, default=1000)
    p.add_argument("--target", type=float, default=0.0)
    p.add_argument("--label", default="")
    p.add_argument("--out", required=True)
    a = p.parse_args()

    torch.set_num_threads(1)
    rank, world = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
    if a.system == "ferry" or a.link:
        ferry.init()
    torch.manual_seed(1)
    model = make_model(a.model)
    sgd = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    if a.system == "ferry":
        rank, workers = ferry.rank(), ferry.size()
        opt = ft.DistributedOptimizer(sgd, named_parameters=model.named_parameters(), algo=a.algo,
                                      topology=a.topology, codec=a.codec, model=model)
        net = model
    else:
        import torch.distributed as dist
        workers = world
        dist.init_process_group("gloo", init_method=f"file://{os.path.abspath(a.out)}.store", rank=rank, world_size=world)
        net = torch.nn.parallel.DistributedDataParallel(model)
        if a.hook:
            net.register_comm_hook(None, ferry.torch.hooks.compress(a.hook, link=a.link))
        opt = sgd
    images, labels = ferry.data.load_fashion_mnist("train")
    loader = ferry.data.ShardedLoader(images, labels, a.batch, rank=rank, world_size=workers)
    tx, ty = ferry.data.load_fashion_mnist("test")
    ex, ey = tx[:a.eval_items], ty[:a.eval_items]

    curve, reached, train_s = [], None, 0.0
    t0 = time.perf_counter()
    for it in range(a.steps):
        x, y = loader.batch(it // loader.steps_per_epoch, it % loader.steps_per_epoch)
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        if a.eval_every and (it + 1) % a.eval_every == 0:
            train_s += time.perf_counter() - t0
            acc = accuracy(model, ex, ey)
            curve.append({"step": it + 1, "train_s": train_s, "acc": acc})
            if reached is None and a.target and acc >= a.target:
                reached = train_s
            t0 = time.perf_counter()
    if hasattr(opt, "finish"):
        opt.finish()
    train_s += time.perf_counter() - t0
    metrics = opt.metrics() if hasattr(opt, "metrics") else {}
    if rank == 0:
        final = accuracy(model, tx, ty)
        with open(a.out, "w") as f:
            json.dump({"label": a.label, "system": a.system, "algo": a.algo if a.system == "ferry" else "ddp",
                       "codec": metrics.get("codec", a.hook or "none"), "model": a.model, "workers": workers,
                       "batch": a.batch, "steps": a.steps, "lr": a.lr, "momentum": a.momentum, "train_s": train_s,
                       "samples_per_s": a.steps * a.batch * workers / train_s,
                       "comm_wait_s": metrics.get("comm_wait_s"), "final_acc": final,
                       "target": a.target, "time_to_target_s": reached, "curve": curve}, f)


if __name__ == "__main__":
    main()
