"""A plain PyTorch training script for Fashion-MNIST, made data-parallel with ferry by the lines
marked `# ferry`: the same additions Horovod's examples make.

    build/default/apps/ferry run --np 4 --servers 1 --link 1Gbps,50us -- \
        /usr/bin/python3 examples/python/fashion_mnist.py --algo ssdsgd --topology ps --codec twobit
"""
import argparse
import gzip
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import ferry  # ferry
import ferry.torch as ft  # ferry

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path) as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def load(split):
    x = read_idx(f"{DATA}/{split}-images-idx3-ubyte.gz").float().div_(255).sub_(0.2860).div_(0.3530)
    return x.unsqueeze(1), read_idx(f"{DATA}/{split}-labels-idx1-ubyte.gz").long()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(64 * 7 * 7, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--algo", default="ssgd")
    p.add_argument("--topology", default="")
    p.add_argument("--codec", default="")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args()

    ferry.init()  # ferry: server ranks serve here and exit
    torch.set_num_threads(1)
    torch.manual_seed(1)
    x, y = load("train")
    shard = slice(ferry.rank(), None, ferry.size())  # ferry: this worker's part of the data
    x, y = x[shard], y[shard]
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    opt = ft.DistributedOptimizer(opt, named_parameters=model.named_parameters(),  # ferry
                                  algo=args.algo, topology=args.topology, codec=args.codec)
    ft.broadcast_parameters(model.state_dict(), root_rank=0)  # ferry
    start = time.time()
    steps = len(x) // args.batch
    for epoch in range(args.epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        for s in range(steps):
            idx = order[s * args.batch:(s + 1) * args.batch]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    opt.finish()  # ferry
    seconds = time.time() - start
    if ferry.rank() == 0:
        tx, ty = load("t10k")
        with torch.no_grad():
            acc = (model(tx).argmax(1) == ty).float().mean().item()
        m = opt.metrics()
        print(f"{args.algo} {m['codec']}: {steps * args.epochs} steps in {seconds:.1f} s, "
              f"{ferry.size() * args.batch * steps * args.epochs / seconds:.0f} samples/s, test accuracy {acc:.4f}, "
              f"waited {m['comm_wait_s']:.1f} s, sent {m['bytes_sent'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
