"""ferry from Python: ferry's distributed training algorithms and gradient codecs for a PyTorch loop.

Shaped like Horovod's API::

    import ferry, ferry.torch
    ferry.init()                       # on parameter-server ranks: serves the job, then exits
    opt = ferry.torch.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                           algo="ssdsgd", topology="ps", codec="twobit")
    ferry.torch.broadcast_parameters(model.state_dict(), root_rank=0)
    for x, y in data: opt.zero_grad(); loss(model(x), y).backward(); opt.step()
    opt.finish()

Launch with ``ferry run --np 4 --servers 1 -- /usr/bin/python3 train.py`` (or ``mpirun -np 5``
with ``FERRY_SERVERS=1``). See docs/python.md.
"""
import atexit
import os
import sys

import torch  # noqa: F401  (libtorch is loaded before the extension that links it)

from . import _C

__all__ = ["init", "shutdown", "rank", "size", "local_rank", "is_server", "is_initialized", "load_plugin"]

_hook_installed = False
# DistributedOptimizers whose finish() shutdown() still owes, held so that one the script dropped
# (a local of a returned main()) is still finished at exit rather than destroyed unfinished.
_unfinished = set()


def _abort_on_uncaught(exc_type, exc, tb):
    # An uncaught exception on one rank must end the job: the other ranks would wait in a
    # collective (or in MPI_Finalize) forever.
    sys.__excepthook__(exc_type, exc, tb)
    sys.stderr.flush()
    if _C.initialised():
        _C.abort(1)


def init(servers=None):
    """Starts MPI. `servers` parameter-server ranks are the last ranks of the world (default: the
    FERRY_SERVERS environment variable that ``ferry run --servers N`` sets, else 0). On a server
    rank this call serves the job that worker 0's DistributedOptimizer announces and then ends the
    process (exit code 0), as BytePS servers do; on workers it returns."""
    global _hook_installed
    if servers is None:
        text = os.environ.get("FERRY_SERVERS", "0")
        try:
            servers = int(text)
        except ValueError:
            raise ValueError(f"FERRY_SERVERS={text!r}: expected a number of servers") from None
    if not isinstance(servers, int) or isinstance(servers, bool) or servers < 0:
        raise ValueError(f"servers={servers!r}: expected an int >= 0")
    _C.init(servers)
    if not _hook_installed:
        sys.excepthook = _abort_on_uncaught
        atexit.register(shutdown)
        _hook_installed = True
    if _C.is_server():
        _C.serve()
        shutdown()
        sys.exit(0)


def load_plugin(path):
    """Loads a ferry plugin (a shared library that adds training strategies, codecs, ...; see
    docs/architecture.md, "Plugins"). Call it on every rank before init(): the parameter-server
    ranks serve inside init() and need the plugin's strategies too. OSError for a missing or
    unloadable file, ValueError for a library that is not a ferry plugin."""
    _C.load_plugin(os.fspath(path))


def shutdown():
    """Ends MPI (also run at exit). Finishes first every DistributedOptimizer the script did not
    finish(), so that the parameter servers, which wait for every worker's finish, end too."""
    for opt in list(_unfinished):
        opt.finish()
    _C.shutdown()


def is_initialized():
    return _C.initialised()


def rank():
    """This worker's rank, 0 .. size() - 1."""
    return _C.side_rank()


def size():
    """The number of workers (servers not counted)."""
    return _C.world_size() - _C.num_servers()


def local_rank():
    """This process's rank on its host (OpenMPI's OMPI_COMM_WORLD_LOCAL_RANK; 0 outside mpirun)."""
    return int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))


def is_server():
    return _C.is_server()
