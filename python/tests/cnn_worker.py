"""One rank of test_ferry.py's comparison with `ferry train`: ferry's built-in `cnn` written in
PyTorch, initialised from the same seed, trained on ferry.data's batches (ferry train's order) with
the same optimizer settings. Worker 0 writes the FNV-1a 64 hash of its final weights (the one
`ferry train` writes as weights_fnv1a, over the parameters in order) to argv[1].
Arguments: OUT ALGO TOPOLOGY STEPS BATCH TRAIN_LIMIT SEED [CODEC]."""
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import ferry
import ferry.data
import ferry.torch as ft


def cnn():
    # src/train/models/cnn.cc, module for module (the same parameters in the same creation order).
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    out, algo, topology = sys.argv[1:4]
    steps, batch, limit, seed = (int(a) for a in sys.argv[4:8])
    codec = sys.argv[8] if len(sys.argv) > 8 else ""
    torch.set_num_threads(1)
    ferry.init()
    torch.manual_seed(seed)  # ferry train: at::manual_seed(--seed), then the model is built
    model = cnn()
    opt = ft.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                  named_parameters=model.named_parameters(), algo=algo, topology=topology, codec=codec)
    images, labels = ferry.data.load_fashion_mnist("train", limit=limit)
    loader = ferry.data.ShardedLoader(images, labels, batch, seed=seed)
    for it in range(steps):
        x, y = loader.batch(it // loader.steps_per_epoch, it % loader.steps_per_epoch)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    opt.finish()
    if ferry.rank() == 0:
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        with open(out, "w") as f:
            json.dump({"weights_fnv1a": format(fnv1a64(flat.numpy().tobytes()), "016x")}, f)


if __name__ == "__main__":
    main()
