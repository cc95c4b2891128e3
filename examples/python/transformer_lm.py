"""A small causal transformer language model on bytes (Python's own standard library sources as the
text), made data-parallel with ferry by the lines marked `# ferry`.

    build/default/apps/ferry run --np 4 -- /usr/bin/python3 examples/python/transformer_lm.py
    build/default/apps/ferry run --np 4 --servers 1 -- \
        /usr/bin/python3 examples/python/transformer_lm.py --algo cdsgd --topology ps

The last 10 % of the text is held out; worker 0 reports its loss in bits per byte.
"""
import argparse
import glob
import math
import sysconfig
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import ferry  # ferry
import ferry.torch as ft  # ferry


def corpus(max_bytes):
    files = sorted(glob.glob(sysconfig.get_paths()["stdlib"] + "/*.py"))
    data = bytearray()
    for f in files:
        with open(f, "rb") as fh:
            data += fh.read()
        if len(data) >= max_bytes:
            break
    return torch.tensor(list(data[:max_bytes]), dtype=torch.long)


class ByteLM(nn.Module):
    def __init__(self, context, dim=128, layers=2, heads=4):
        super().__init__()
        self.embed = nn.Embedding(256, dim)
        self.pos = nn.Parameter(torch.zeros(context, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, 256)
        self.register_buffer("mask", torch.triu(torch.full((context, context), float("-inf")), 1))

    def forward(self, x):
        n = x.shape[1]
        h = self.embed(x) + self.pos[:n]
        return self.head(self.blocks(h, mask=self.mask[:n, :n]))


def windows(text, starts, context):
    idx = starts.unsqueeze(1) + torch.arange(context + 1)
    chunk = text[idx]
    return chunk[:, :-1], chunk[:, 1:]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--algo", default="ssgd")
    p.add_argument("--topology", default="")
    p.add_argument("--codec", default="")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    args = p.parse_args()

    ferry.init()  # ferry
    torch.set_num_threads(1)
    text = corpus(2_000_000)
    split = int(len(text) * 0.9)
    train, held_out = text[:split], text[split:]
    torch.manual_seed(1)
    model = ByteLM(args.context)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    opt = ft.DistributedOptimizer(opt, named_parameters=model.named_parameters(),  # ferry
                                  algo=args.algo, topology=args.topology, codec=args.codec)
    ft.broadcast_parameters(model.state_dict(), root_rank=0)  # ferry
    g = torch.Generator().manual_seed(1000 + ferry.rank())  # ferry: each worker its own windows
    start = time.time()
    for step in range(args.steps):
        x, y = windows(train, torch.randint(0, len(train) - args.context - 1, (args.batch,), generator=g),
                       args.context)
        opt.zero_grad()
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        loss.backward()
        opt.step()
        if ferry.rank() == 0 and (step + 1) % 50 == 0:
            print(f"step {step + 1}: train {loss.item() / math.log(2):.3f} bits/byte", flush=True)
    opt.finish()  # ferry
    seconds = time.time() - start
    if ferry.rank() == 0:
        starts = torch.arange(0, len(held_out) - args.context - 1, len(held_out) // 256)[:256]
        x, y = windows(held_out, starts, args.context)
        with torch.no_grad():
            bpb = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1)).item() / math.log(2)
        m = opt.metrics()
        print(f"{args.algo} {m['codec']}: {args.steps} steps in {seconds:.1f} s, held-out {bpb:.3f} bits/byte "
              f"(8 = knowing nothing), waited {m['comm_wait_s']:.1f} s, sent {m['bytes_sent'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
