#!/usr/bin/python3
"""PyTorch DDP baseline for ferry's S-SGD: the same models, data and batch schedule.

Spawns --np worker processes on this machine (gloo backend over 127.0.0.1), each with
torch.set_num_threads(--threads). Each worker trains a copy of the model with SGD (lr, momentum)
on its shard of Fashion-MNIST: every epoch all workers share one permutation of the training
set and worker r takes items [s*N*B + r*B, s*N*B + (r+1)*B) at step s, as ferry's
ShardedSampler does (the permutation itself differs: torch.randperm, not SplitMix64).

Throughput mode (default): --warmup iterations, then --iters timed iterations;
samples/s = iters * batch * np / elapsed. With --epochs E it instead trains E full epochs,
times every iteration after the warm-up ones, and reports the final test accuracy.

Uses the Debian interpreter (/usr/bin/python3 with python3-torch and python3-numpy).
"""

import argparse
import gzip
import json
import os
import socket
import struct
import sys
import time

try:
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:  # pragma: no cover - environment problem
    sys.exit(f"ddp_cnn.py: {e}; run it with /usr/bin/python3 (Debian python3-torch)")

FASHION_MEAN = 0.2860
FASHION_STD = 0.3530


def read_idx(path, magic):
    """Reads an unsigned-byte IDX file (gzip or plain) into a numpy array."""
    if not os.path.isfile(path):
        sys.exit(f"ddp_cnn.py: {path}: no such file")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = magic & 0xFF
    if len(data) < 4 + 4 * ndim:
        sys.exit(f"ddp_cnn.py: {path}: truncated IDX header")
    got = struct.unpack(">I", data[:4])[0]
    if got != magic:
        sys.exit(f"ddp_cnn.py: {path}: wrong IDX magic 0x{got:08X}, expected 0x{magic:08X}")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    payload = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if payload.size != int(np.prod(dims)):
        sys.exit(f"ddp_cnn.py: {path}: IDX size mismatch: dims {dims} need "
                 f"{int(np.prod(dims))} bytes, found {payload.size}")
    return payload.reshape(dims)


def find(data_dir, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(data_dir, name)
        if os.path.isfile(p):
            return p
    return os.path.join(data_dir, stem + ".gz")


def load_split(data_dir, prefix):
    images = read_idx(find(data_dir, f"{prefix}-images-idx3-ubyte"), 0x803)
    labels = read_idx(find(data_dir, f"{prefix}-labels-idx1-ubyte"), 0x801)
    if images.shape[0] != labels.shape[0]:
        sys.exit(f"ddp_cnn.py: {data_dir}: {images.shape[0]} images but {labels.shape[0]} labels")
    x = torch.from_numpy(images.astype(np.float32) / 255.0)
    x = ((x - FASHION_MEAN) / FASHION_STD).unsqueeze(1).contiguous()
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def make_model(name):
    """The same architectures as src/train/models (mlp.cc, cnn.cc, fcnet.cc)."""
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                             nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "fcnet":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 2048), nn.ReLU(),
                             nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                             nn.Linear(2048, 10))
    sys.exit(f"ddp_cnn.py: unknown model '{name}'; known models: mlp, cnn, fcnet")


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct, loss_sum = 0, 0.0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            logits = model(x[i:i + batch])
            loss_sum += F.cross_entropy(logits, y[i:i + batch], reduction="sum").item()
            correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / x.shape[0], loss_sum / x.shape[0]


def worker(rank, args, port, result_queue):
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=args.np)
    torch.manual_seed(args.seed)  # same initial weights everywhere (DDP also broadcasts them)
    model = DDP(make_model(args.model))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    x, y = load_split(args.data, "train")
    n, world, b = x.shape[0], args.np, args.batch
    steps_per_epoch = n // (world * b)
    if steps_per_epoch == 0:
        sys.exit(f"ddp_cnn.py: a global batch of {world * b} does not fit in {n} items")

    if args.epochs > 0:
        total = args.epochs * steps_per_epoch
        timed_from = min(args.warmup, total - 1)
    else:
        total = args.warmup + args.iters
        timed_from = args.warmup

    perm, perm_epoch = None, -1
    loss = torch.zeros(())
    start = None
    for it in range(total):
        epoch, step = divmod(it, steps_per_epoch)
        if epoch != perm_epoch:
            g = torch.Generator()
            g.manual_seed(args.seed * 1000003 + epoch)
            perm, perm_epoch = torch.randperm(n, generator=g), epoch
        if it == timed_from:
            dist.barrier()
            start = time.perf_counter()
        lo = step * world * b + rank * b
        idx = perm[lo:lo + b]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
    dist.barrier()
    elapsed = time.perf_counter() - start
    timed_iters = total - timed_from

    result = None
    if rank == 0:
        result = {
            "framework": "pytorch-ddp",
            "backend": "gloo",
            "torch_version": torch.__version__,
            "model": args.model,
            "params": sum(p.numel() for p in model.parameters()),
            "np": world,
            "batch": b,
            "threads_per_worker": args.threads,
            "lr": args.lr,
            "momentum": args.momentum,
            "warmup_iters": timed_from,
            "timed_iters": timed_iters,
            "epochs": args.epochs,
            "wall_s": elapsed,
            "s_per_iter": elapsed / timed_iters,
            "samples_per_s": timed_iters * b * world / elapsed,
            "last_train_loss": loss.item(),
            "test_acc": None,
            "test_loss": None,
        }
        if args.epochs > 0 or args.eval:
            tx, ty = load_split(args.data, "t10k")
            result["test_acc"], result["test_loss"] = evaluate(model.module, tx, ty)
        result_queue.put(result)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--np", type=int, default=4, help="worker processes")
    p.add_argument("--iters", type=int, default=200, help="timed iterations (throughput mode)")
    p.add_argument("--warmup", type=int, default=20, help="untimed iterations first")
    p.add_argument("--epochs", type=int, default=0,
                   help="train this many full epochs instead, then report test accuracy")
    p.add_argument("--eval", action="store_true", help="report test accuracy in throughput mode")
    p.add_argument("--batch", type=int, default=64, help="items per worker per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--model", default="cnn", help="mlp, cnn or fcnet")
    p.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                   help="directory of MNIST-format IDX files")
    p.add_argument("--out", default="", help="write the result as JSON here")
    args = p.parse_args()
    if args.np < 1 or args.batch < 1 or args.iters < 1 or args.warmup < 0 or args.epochs < 0:
        sys.exit("ddp_cnn.py: --np, --batch and --iters must be at least 1; --warmup and --epochs at least 0")
    make_model(args.model)  # fail early on an unknown name
    if not os.path.isdir(args.data):
        sys.exit(f"ddp_cnn.py: {args.data}: no such directory")
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, free_port(), queue), nprocs=args.np, join=True)
    result = queue.get()
    acc = "" if result["test_acc"] is None else f", test_acc {result['test_acc']:.4f}"
    print(f"ddp {result['model']} np={result['np']} batch={result['batch']}: "
          f"{result['samples_per_s']:.1f} samples/s over {result['timed_iters']} iterations "
          f"({result['s_per_iter'] * 1e3:.2f} ms/iter){acc}")
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
