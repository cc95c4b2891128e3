"""ferry.data: the data sets and the data order of `ferry train`, from Python.

load_fashion_mnist() returns ferry's tensors (float32 [N, 1, 28, 28] normalised with Fashion-MNIST's
mean 0.2860 and stddev 0.3530, int64 labels) from the IDX files Debian's dataset-fashion-mnist
installs, or from any directory of MNIST-format IDX files. ShardedLoader gives worker `rank` the
batches a `ferry train` worker of the same rank, world size, batch size and seed trains on: every
epoch one permutation shared by all workers (SplitMix64 Fisher-Yates, seeded by seed and epoch),
cut into disjoint per-worker batches; the last incomplete global batch is dropped. As with
torch.utils.data.DistributedSampler, every worker sees a disjoint shard of each epoch.
"""
from . import _C

__all__ = ["load_fashion_mnist", "ShardedLoader", "FASHION_MNIST_DIR"]

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def load_fashion_mnist(split="train", limit=0, dir=FASHION_MNIST_DIR):
    """(images, labels) of the train or test split; `limit` keeps only the first items (0: all).
    A missing directory or file raises OSError naming it, a corrupt file ValueError."""
    return _C.load_mnist(str(dir), split, int(limit))


class ShardedLoader:
    """This worker's batches of (images, labels), in ferry train's order.

    rank and world_size default to ferry.rank() and ferry.size() (ferry.init() first)."""

    def __init__(self, images, labels, batch_size, rank=None, world_size=None, seed=1, shuffle=True):
        if rank is None or world_size is None:
            rank, world_size = _C.side_rank(), _C.side_size()
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"images ({images.shape[0]}) and labels ({labels.shape[0]}) differ in length")
        self.images, self.labels, self.rank = images, labels, rank
        self._sampler = _C.ShardedSampler(int(labels.shape[0]), int(world_size), int(batch_size), int(seed),
                                          bool(shuffle))

    @property
    def steps_per_epoch(self):
        return self._sampler.steps_per_epoch

    def batch(self, epoch, step):
        """This worker's (images, labels) at (epoch, step)."""
        idx = self._sampler.indices(epoch, step, self.rank)
        return self.images.index_select(0, idx), self.labels.index_select(0, idx)

    def epoch(self, epoch, start=0):
        """The batches of one epoch, from step `start` on."""
        for s in range(start, self.steps_per_epoch):
            yield self.batch(epoch, s)
