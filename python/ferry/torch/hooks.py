"""ferry's gradient codecs as a DistributedDataParallel communication hook, over DDP's own process
group (gloo or any other), for users who keep DDP:

    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(None, ferry.torch.hooks.compress("twobit:threshold=0.005"))

Each parameter gets its own codec instance, as in ferry's own training loop, so error feedback
(the codec's residual) follows the parameter even when DDP rebuilds its buckets after the first
iteration. A bucket's tensors are encoded, their payloads all-gathered in one message per
worker, decoded and summed (PowerSGD runs its own two allreduces per tensor), then divided by the
number of workers, as DDP's allreduce averages.
"""
import torch
import torch.distributed as dist

from .. import _C

__all__ = ["compress"]


def _allgather_bytes(payload, group, world):
    # Payloads of variable size (sparse codecs): sizes first, then zero-padded payloads.
    size = torch.tensor([payload.numel()], dtype=torch.int64)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    longest = max(int(s.item()) for s in sizes)
    padded = torch.zeros(longest, dtype=torch.uint8)
    padded[:payload.numel()] = payload
    gathered = [torch.empty(longest, dtype=torch.uint8) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    return [g[:int(s.item())] for g, s in zip(gathered, sizes)]


def compress(spec):
    """A DDP communication hook compressing every gradient with the codec `spec` (any ferry codec
    spec, "none" included). Raises ValueError for a bad spec, here, before training."""
    try:
        spec = _C.canonical_codec_spec(spec)
    except ValueError as e:
        raise ValueError(f"compress({spec!r}): {e}") from None
    codecs = {}  # id(parameter) -> its codec; ids are given in first-seen order, the same on every worker

    def codec_of(param, rank):
        c = codecs.get(id(param))
        if c is None:
            c = codecs[id(param)] = _C.Codec(spec, list(param.shape), len(codecs), rank)
        return c

    def hook(state, bucket):
        group = state if state is not None else dist.group.WORLD
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        grads = [g.detach().contiguous().view(-1) for g in bucket.gradients()]
        for g in grads:
            if g.dtype != torch.float32 or g.device.type != "cpu":
                raise ValueError(f"ferry codec hook: expected float32 CPU gradients, got {g.dtype} on {g.device}")
        codecs_here = [codec_of(p, rank) for p in bucket.parameters()]
        outs = [g.clone() for g in grads]
        gathered = []  # (tensor index) of the tensors aggregated by payloads
        payloads = []
        for i, (c, g) in enumerate(zip(codecs_here, grads)):
            if not c.custom_allreduce(outs[i], lambda t: dist.all_reduce(t, group=group), world):
                gathered.append(i)
                payloads.append(c.encode(g))
        if gathered:
            lengths = torch.tensor([p.numel() for p in payloads], dtype=torch.int64)
            everyone = _allgather_bytes(torch.cat([lengths.view(torch.uint8)] + payloads), group, world)
            for i in gathered:
                outs[i].zero_()
            head = 8 * len(gathered)
            for message in everyone:
                sizes = message[:head].clone().view(torch.int64).tolist()
                offset = head
                for i, n in zip(gathered, sizes):
                    codecs_here[i].decode_add(message[offset:offset + n], outs[i])
                    offset += n
        result = torch.cat(outs).div_(world)
        future = torch.futures.Future()
        future.set_result(result.view_as(bucket.buffer()))
        return future

    return hook
