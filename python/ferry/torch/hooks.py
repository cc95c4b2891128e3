"""ferry's gradient codecs as a DistributedDataParallel communication hook, over DDP's own process
group (gloo or any other), for users who keep DDP:

    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(None, ferry.torch.hooks.compress("twobit:threshold=0.005"))

Each parameter gets its own codec instance, as in ferry's own training loop, so error feedback
(the codec's residual) follows the parameter even when DDP rebuilds its buckets after the first
iteration. The bucket's exchange is the C++ one `ferry train` runs (train/bucket_exchange.h, through
train/bucket_averager.h): the tensors are encoded, their payloads all-gathered in one message per
worker, decoded and summed (PowerSGD runs its own two allreduces per tensor), then divided by the
number of workers, as DDP's allreduce averages; with "none" the bucket is allreduced as DDP's
default hook does. This module hands it the bucket and the transport, two callables: allreduce_
(sums a tensor in place over the workers) and allgather (every worker's bytes, in rank order).

compress(spec, link="1Gbps,50us") sends the payloads over ferry's MPI workers instead (ferry.init()
first), through ferry's emulated link, the one `DistributedOptimizer(link=...)` and `ferry run --link`
use, so that DDP and ferry's algorithms are compared on the same link. Either way the bucket's work
runs on one background thread and the hook returns a future at once, so that communication
overlaps the rest of the backward pass as DDP's own allreduce does.

The hook sees gradients only; the momentum and weight decay stay in the torch optimizer that
steps after it, on the decoded average: a codec's `momentum_at=server` placement, which the hook's
spec resolves to. A spec that asks for the momentum on the worker (`momentum_at=worker`, `ef21=1`)
is DistributedOptimizer's and is refused here.
"""
import atexit
import concurrent.futures
import sys
import time
import traceback
import weakref

import torch
import torch.distributed as dist

from .. import _C

__all__ = ["compress"]

_worker = None  # the one thread every hook's bucket work runs on, in DDP's bucket order
# The tensors this module handed to DDP's process group and that are still alive: the Python side
# drops them when a collective returns, but the group's own threads may hold them a moment longer.
_handed_to_group = weakref.WeakSet()
_EXIT_WAIT_S = 10.0  # they are let go of within a scheduling slice; this bounds a stuck group's cost


def _wait_for_the_group_at_exit(timeout_s=_EXIT_WAIT_S):
    """At interpreter exit, before finalisation: finish the bucket thread, then wait until the
    process group's threads have let go of every tensor the hook handed them. A tensor's Python
    object is freed by the thread that drops the tensor's last reference, under the GIL; a gloo thread
    doing so once finalisation has begun cannot take the GIL and aborts the process ("terminate
    called without an active exception"). The wait ends as soon as the last such tensor is freed."""
    global _worker
    if _worker is not None:
        _worker.shutdown(wait=True)
        _worker = None
    deadline = time.monotonic() + timeout_s
    while (held := len(_handed_to_group)) and time.monotonic() < deadline:
        time.sleep(0.001)  # releases the GIL, which the group's thread needs to free them
    if held:
        sys.stderr.write(f"ferry.torch.hooks: the process group still holds {held} of the hook's "
                         f"tensors {timeout_s:g} s into exit; exiting anyway\n")


atexit.register(_wait_for_the_group_at_exit)


def _run_async(work):
    global _worker
    if _worker is None:
        _worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ferry-hook")
    future = torch.futures.Future()

    def run():
        try:
            future.set_result(work())
        except BaseException as e:  # noqa: B902 - handed to DDP, which raises it in backward()
            traceback.clear_frames(e.__traceback__)  # the lines stay; the bucket's tensors are let go
            future.set_exception(e)
    _worker.submit(run)
    return future


class _DdpGroup:
    """The exchange's transport over DDP's process group."""

    def __init__(self, group):
        self.group = group if group is not None else dist.group.WORLD
        self.world, self.rank = dist.get_world_size(self.group), dist.get_rank(self.group)

    def allreduce_(self, t):
        # On a tensor of our own: t may be a view of a codec's memory, whose last reference the
        # group's thread must not be the one to drop (_wait_for_the_group_at_exit).
        summed = t.clone()
        _handed_to_group.add(summed)
        dist.all_reduce(summed, group=self.group)
        t.copy_(summed)

    def allgather(self, payload):
        # Payloads of variable size (sparse codecs): sizes first, then zero-padded payloads.
        sizes = self._all_gather(torch.tensor([payload.numel()], dtype=torch.int64))
        padded = torch.zeros(max(int(s.item()) for s in sizes), dtype=torch.uint8)
        padded[:payload.numel()] = payload
        return [g[:int(s.item())] for g, s in zip(self._all_gather(padded), sizes)]

    def _all_gather(self, t):
        """Every worker's `t` (all the same shape), on tensors the exit wait follows."""
        gathered = [torch.empty_like(t) for _ in range(self.world)]
        _handed_to_group.update([t, *gathered])
        dist.all_gather(gathered, t, group=self.group)
        return gathered


class _FerryLink:
    """The exchange's transport over ferry's workers, through the emulated link `link`."""

    def __init__(self, link):
        self.link, self.world, self.rank = link, _C.side_size(), _C.side_rank()

    def allreduce_(self, t):
        _C.allreduce_sum_(t, self.link)

    def allgather(self, payload):
        return _C.allgather_bytes(payload, self.link)


def _hook_spec(spec):
    """The canonical spec of `spec` with the momentum where the hook leaves it: after the hook, in
    the torch optimizer (momentum_at=server). ValueError for a bad spec or one that asks for the
    momentum on the worker."""
    try:
        return _C.canonical_codec_spec_on_aggregate(spec)
    except ValueError as e:
        raise ValueError(f"compress({spec!r}): {e}") from None


def compress(spec, link=None):
    """A DDP communication hook compressing every gradient with the codec `spec` (any ferry codec
    spec, "none" included), over DDP's process group or, with `link`, over ferry's workers through
    that emulated link. Raises ValueError for a bad spec or link, here, before training."""
    spec = _hook_spec(spec)
    if link is not None:
        if not _C.initialised():
            raise ValueError("compress(link=...): the link is ferry's: call ferry.init() first")
        try:
            _C.link_bytes_sent(link)  # parses it
        except ValueError as e:
            raise ValueError(f"compress(link={link!r}): {e}") from None
    exchange = _C.DdpHook(spec)  # the codec of every parameter, made at its first bucket

    def hook(state, bucket):
        net = _FerryLink(link) if link is not None else _DdpGroup(state)
        taken = exchange.take(bucket.buffer(), bucket.parameters(), bucket.gradients(), net.rank)
        return _run_async(lambda: taken.average(net.world, net.allreduce_, net.allgather))

    return hook
