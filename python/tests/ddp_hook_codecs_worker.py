"""One rank of test_ferry.py's test of the DDP hook against ferry's C++ allreduce path, on 2 workers.

For every codec, a small model (a convolution, two linear layers, biases) trains under torch's
DistributedDataParallel (gloo) with ferry's codec hook, and a copy of it runs the same steps under
ferry's DistributedOptimizer (S-SGD on allreduce over MPI: TensorAllreduceCodecs, `ferry train`'s
path) with the hook's spec and its parameters in the order the hook first saw them (the codecs'
tensor ids). After each backward DDP's p.grad is the hook's average; the copy, with its weights
zeroed before ferry's update (lr 1, no momentum, rescale 1/2), holds -(sum of the decoded
gradients) / 2: the two must be equal exactly. Rank 0 writes, per spec, the (step, parameter)
pairs that differ, how many were compared, whether the hook's average differs from the fp32 one
(the codec compressed something) and the buckets of each step, as JSON to argv[1]."""
import json
import os
import sys

import torch
import torch.distributed as dist

import ferry
import ferry.torch as ft
import ferry.torch.hooks
from ferry import _C

STEPS = 3
BATCH = 4  # per worker
SPECS = {"twobit": "twobit:threshold=0.01", "topk": "topk:ratio=0.3", "randomk": "randomk:ratio=0.3",
         "dgc": "dgc:ratio=0.3", "powersgd": "powersgd:rank=2"}  # the other codecs with their defaults


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.Flatten(), torch.nn.Linear(48, 7),
                               torch.nn.ReLU(), torch.nn.Linear(7, 5))


def compare(spec, rank):
    model, copy = make_model(), make_model()
    seen = []  # the parameters in the order the hook first saw them
    buckets = []  # per step, how many buckets the hook was given

    def hook(state, bucket, inner=ferry.torch.hooks.compress(spec)):
        seen.extend(p for p in bucket.parameters() if all(p is not q for q in seen))
        buckets[-1] += 1
        return inner(state, bucket)

    # One bucket in the first step; DDP then rebuilds them, here into several (1 KiB each).
    dist._DEFAULT_FIRST_BUCKET_BYTES = 1024
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1 / 1024)
    ddp.register_comm_hook(None, hook)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    copied = dict(copy.named_parameters())
    opt, ordered = None, None
    result = {"mismatches": [], "compared": 0, "lossy": False}
    for step in range(STEPS):
        g = torch.Generator().manual_seed(100 * step + rank)
        x, t = torch.randn(BATCH, 2, 6, 6, generator=g), torch.randn(BATCH, 5, generator=g)
        sgd.zero_grad()
        buckets.append(0)
        ((ddp(x) - t) ** 2).sum().backward()
        if opt is None:
            ordered = [names[id(p)] for p in seen]
            opt = ft.DistributedOptimizer(torch.optim.SGD([copied[n] for n in ordered], lr=1.0), algo="ssgd",
                                          topology="allreduce", codec=ferry.torch.hooks._hook_spec(spec))
        with torch.no_grad():
            for n, p in model.named_parameters():
                copied[n].copy_(p)
        opt.zero_grad()
        ((copy(x) - t) ** 2).sum().backward()
        local = {n: copied[n].grad.clone() for n in ordered}
        with torch.no_grad():
            for n in ordered:
                copied[n].zero_()
        opt.step()
        for n, p in model.named_parameters():
            fp32 = local[n].clone()
            dist.all_reduce(fp32)
            result["lossy"] |= not torch.equal(p.grad, fp32 / 2)
            result["compared"] += 1
            if not torch.equal(p.grad, -copied[n].detach()):
                result["mismatches"].append([step, n])
        sgd.step()
    opt.finish()
    result["buckets"] = buckets
    return result


def main():
    out, store = sys.argv[1], sys.argv[2]
    rank, world = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    ferry.init()
    results = {}
    for name in _C.codec_names():
        if not _C.codec_is_identity(name):  # "none": DDP's own allreduce, test_ddp_hook_equals_its_reference
            results[name] = compare(SPECS.get(name, name), rank)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
