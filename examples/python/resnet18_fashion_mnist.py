"""torchvision's ResNet-18, unchanged but for its first convolution (one input channel), trained on
Fashion-MNIST and made data-parallel with ferry by the lines marked `# ferry`: the lines Horovod's
PyTorch examples add.

    build/default/apps/ferry run --np 4 -- /usr/bin/python3 examples/python/resnet18_fashion_mnist.py
    build/default/apps/ferry run --np 4 --servers 1 --link 1Gbps,50us -- \
        /usr/bin/python3 examples/python/resnet18_fashion_mnist.py --algo ssdsgd --topology ps --codec twobit

--checkpoint-dir D writes ferry's state to D/ckpt-<steps> at the end, and each worker's BatchNorm
statistics next to it; --resume D (with --checkpoint-dir D to keep saving) continues from the newest.
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import ferry  # ferry
import ferry.data
import ferry.torch as ft  # ferry


def resnet18():
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)  # grey images
    return model


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--algo", default="ssgd")
    p.add_argument("--topology", default="")
    p.add_argument("--codec", default="")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: all epochs)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--checkpoint-dir", default=None)
    p.add_argument("--resume", default=None)
    args = p.parse_args()

    ferry.init()  # ferry: parameter-server ranks serve here and exit
    torch.set_num_threads(1)
    torch.manual_seed(1)
    images, labels = ferry.data.load_fashion_mnist("train")
    loader = ferry.data.ShardedLoader(images, labels, args.batch)  # ferry: this worker's batches
    model = resnet18()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    opt = ft.DistributedOptimizer(opt, named_parameters=model.named_parameters(),  # ferry
                                  algo=args.algo, topology=args.topology, codec=args.codec,
                                  checkpoint_dir=args.checkpoint_dir, resume=args.resume)
    ft.broadcast_parameters(model.state_dict(), root_rank=0)  # ferry: weights and BatchNorm statistics
    if args.resume:
        model.load_state_dict(torch.load(os.path.join(args.resume, f"buffers-{ferry.rank()}.pt")), strict=False)
        # (the weights themselves came back with ferry's state)
    total = loader.steps_per_epoch * args.epochs
    if args.steps:
        total = min(total, args.steps)
    start, first = time.time(), opt.iterations
    model.train()
    for it in range(first, total):
        x, y = loader.batch(it // loader.steps_per_epoch, it % loader.steps_per_epoch)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if ferry.rank() == 0 and (it + 1) % 50 == 0:
            print(f"step {it + 1}/{total}: loss {loss.item():.3f}", flush=True)
    if args.checkpoint_dir:
        opt.save_checkpoint()  # ferry: weights, velocities, residuals, delay buffers, servers' shards
        torch.save({k: v for k, v in model.state_dict().items() if "running" in k or "num_batches" in k},
                   os.path.join(args.checkpoint_dir, f"buffers-{ferry.rank()}.pt"))  # the script's own state
    opt.finish()  # ferry
    seconds = time.time() - start
    if ferry.rank() == 0:
        tx, ty = ferry.data.load_fashion_mnist("test")
        model.eval()
        with torch.no_grad():
            acc = sum((model(tx[i:i + 500]).argmax(1) == ty[i:i + 500]).sum().item() for i in range(0, len(ty), 500))
        m = opt.metrics()
        done = total - first
        print(f"{args.algo} {m['codec']}: {done} steps in {seconds:.1f} s, "
              f"{ferry.size() * args.batch * done / max(seconds, 1e-9):.0f} samples/s, test accuracy {acc / len(ty):.4f}, "
              f"waited {m['comm_wait_s']:.1f} s, sent {m['bytes_sent'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
