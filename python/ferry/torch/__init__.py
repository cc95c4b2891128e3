"""ferry.torch: a DistributedOptimizer wrapping a torch.optim.SGD with any ferry algorithm and codec,
and the collectives a training script needs (broadcast_parameters, allreduce)."""
import json
import os
import re

import torch

from .. import _C
from .. import _unfinished

from . import hooks  # noqa: E402,F401

__all__ = ["DistributedOptimizer", "broadcast_parameters", "allreduce", "algorithms", "option_keywords", "hooks"]

def _pythonic(message):
    """ferry's messages name command-line flags (--delay-steps); here they are keyword arguments."""
    return re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), message)


def algorithms():
    """Every training algorithm ferry has, by name."""
    return list(_C.strategy_names())


def option_keywords():
    """The keywords of DistributedOptimizer that are options of `ferry train` (its flags' names, '_'
    for '-'), as ferry's option table declares them."""
    return list(_C.option_keywords())


class DistributedOptimizer:
    """Wraps a torch.optim.SGD (or a torch.optim.AdamW, see below) so that step() runs a ferry
    algorithm over every worker; DiLoCo and Streaming DiLoCo wrap any torch.optim optimizer as their
    inner optimizer (an SGD runs as ferry's own inner SGD, as `ferry train` does; any other, e.g.
    AdamW, steps first in step(), and its state stays on the worker).

    The update itself is ferry's (MXNet's SGD with momentum and weight decay, the one every ferry
    algorithm is defined with), with the wrapped optimizer's lr, momentum and weight_decay: on the
    workers for allreduce algorithms, on the servers for ps ones, and for the delayed algorithms
    (odsgd, ssdsgd, cdsgd) the global update on the servers with a local one on the workers (lr_local,
    default lr). Where the workers step the optimizer themselves (ssgd on allreduce, localsgd,
    compute-only: `ferry train --optimizer`), a torch.optim.AdamW runs as ferry's AdamW with its lr,
    betas, eps and weight_decay; lr_schedule="cosine:warmup_steps=W,steps=T" (or "constant:
    warmup_steps=W") schedules the lr of ferry's own optimizer as `ferry train --lr-schedule` does
    (docs/training.md; T must be given here, there is no --max-steps). The parameters are moved into one flat buffer; replace their values in place only
    (p.copy_), never by p.data = ... (detected at step()).

    Keyword options: algo, and the options of `ferry train` that this API takes, named as its flags
    with '_' for '-' (option_keywords(); declared once in ferry's option table,
    src/train/train_option_fields.cc): topology ("allreduce" | "ps"; default: the algorithm's), codec
    (a codec spec, e.g. "twobit:threshold=0.005"; default: the algorithm's), compress_pull (ps:
    compress pull replies too, with this spec, or True for the codec), link ("1Gbps,50us": an
    emulated NIC per rank; default: FERRY_LINK or none), checkpoint_dir (where save_checkpoint()
    writes ferry's state), resume (a checkpoint, or a checkpoint_dir whose newest one is taken, to
    continue from), keep_checkpoints, batch (the per-worker batch size, needed by codec thresholds in
    MXNet's units, twobit:units=mxnet); None stands for the default. model (the torch.nn.Module whose
    parameters these are: wfbp then completes each update when the next forward reaches the module
    that reads it, overlapping the back layers' communication with the front layers' forward, as in
    ferry train; other algorithms do not need it). Any other keyword is a key of the algorithm's
    spec, which joins it: algo="ssdsgd", delay_steps=2 is algo="ssdsgd:delay_steps=2",
    algo="diloco", inner_steps=50 is algo="diloco:inner_steps=50" (the keys are ferry train's flags
    with '_' for '-'; ferry.torch.algorithms() names the algorithms). A key the algorithm does not
    have, or a bad value, raises ValueError naming it.
    """

    def __init__(self, optimizer, named_parameters=None, algo="ssgd", *, model=None, **options):
        if not _C.initialised():
            raise ValueError("ferry is not initialised: call ferry.init() first")
        keywords = set(option_keywords())
        given = {k: v for k, v in options.items() if k in keywords and v is not None}
        # The algorithm's own keys given as keyword arguments join its spec, here and nowhere else:
        # algo="diloco", inner_steps=50 is algo="diloco:inner_steps=50" (ferry refuses unknown keys).
        spec_keys = {k: v for k, v in options.items() if k not in keywords}
        if spec_keys:
            extra = ",".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in spec_keys.items())
            algo = f"{algo},{extra}" if ":" in algo else f"{algo}:{extra}"
        compress_pull = given.pop("compress_pull", None)
        if compress_pull is True:
            if not given.get("codec"):
                raise ValueError("compress_pull=True compresses pulls with codec=, which is not given")
            compress_pull = given["codec"]
        if compress_pull:
            given["compress_pull"] = compress_pull
        given.setdefault("link", os.environ.get("FERRY_LINK", "none"))
        given = {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in given.items()}
        given["algo"] = algo
        try:
            external = _C.takes_external_optimizer(algo) and not isinstance(optimizer, torch.optim.SGD)
        except ValueError as e:
            raise ValueError(_pythonic(str(e))) from None
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise ValueError(f"optimizer: expected a torch.optim optimizer, got {type(optimizer).__name__}")
        adamw = not external and isinstance(optimizer, torch.optim.AdamW)
        if not external and not adamw and not isinstance(optimizer, torch.optim.SGD):
            raise ValueError(f"optimizer: ferry runs SGD with momentum (MXNet's update) or AdamW for algo={algo!r}; "
                             f"got {type(optimizer).__name__}, expected torch.optim.SGD or torch.optim.AdamW (the "
                             f"algorithms that step with any torch.optim optimizer: "
                             f"{', '.join(a for a in algorithms() if _C.takes_external_optimizer(a))})")
        groups = optimizer.param_groups
        g = groups[0]
        if not external:
            for other in groups[1:]:
                for key in ("lr", "betas", "eps", "weight_decay") if adamw else ("lr", "momentum", "weight_decay"):
                    if other[key] != g[key]:
                        raise ValueError(f"optimizer: parameter groups with different {key} ({g[key]} and "
                                         f"{other[key]}) are not supported")
            if adamw and (g.get("amsgrad") or g.get("maximize")):
                raise ValueError("optimizer: amsgrad and maximize are not part of ferry's AdamW update")
            if not adamw and (g.get("nesterov") or g.get("dampening", 0) != 0):
                raise ValueError("optimizer: nesterov and dampening are not part of ferry's SGD update")
            # ferry steps it as its own --optimizer: torch's AdamW with its betas and eps, or SGD.
            given["optimizer"] = (f"adamw:beta1={g['betas'][0]!r},beta2={g['betas'][1]!r},eps={g['eps']!r}"
                                  if adamw else "sgd")
        if named_parameters is not None:
            named = list(named_parameters)
            params = [p for _, p in named]
            in_optimizer = {id(p) for grp in groups for p in grp["params"]}
            for name, p in named:
                if id(p) not in in_optimizer:
                    raise ValueError(f"named_parameters: '{name}' is not among the optimizer's parameters")
        else:
            params = [p for grp in groups for p in grp["params"]]
        for i, p in enumerate(params):
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise ValueError(f"parameter {i}: expected a float32 CPU tensor, got {p.dtype} on {p.device}")

        try:
            keywords_json = json.dumps(given, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"options: {e}") from None
        sgd = None if external else (float(g["lr"]), 0.0 if adamw else float(g["momentum"]), float(g["weight_decay"]))
        gates = self._layer_gates(model, params) if model is not None else {}
        self._optimizer = optimizer
        self._external = external
        self._params = params
        self._lr = g["lr"]  # as given (o.lr is its float32 rounding)
        try:
            self._impl = _C.Optimizer(params, keywords_json, sgd, external)
        except ValueError as e:
            raise ValueError(_pythonic(str(e))) from None
        self._finished = False
        _unfinished.add(self)  # ferry.shutdown() (at exit) finishes it if the script does not
        self._gate_hooks = []
        if gates and self._impl.take_layer_gate():  # else the algorithm completes its updates in step()
            self._install_layer_gate(gates, len(params))

    @staticmethod
    def _layer_gates(model, params):
        """{module: indices of the params its forward may read}: the model's own, and for every
        submodule its whole subtree's (so that a module reading a child's weight without calling
        the child, as MultiheadAttention does with out_proj, is still covered)."""
        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
        index = {id(p): i for i, p in enumerate(params)}
        gates = {}
        for module in model.modules():
            own = module.parameters(recurse=module is not model)
            ids = sorted({index[id(p)] for p in own if id(p) in index})
            if ids:
                gates[module] = ids
        covered = {i for ids in gates.values() for i in ids}
        if len(covered) != len(params):
            missing = next(i for i in range(len(params)) if i not in covered)
            raise ValueError(f"model: parameter {missing} of the optimizer is not a parameter of the model")
        return gates

    def _install_layer_gate(self, gates, count):
        # Each update completes when the first module that may read it starts its forward; step()
        # checks that every parameter was reached, since one read elsewhere would see old weights.
        gate = self._impl.gate
        self._reached = [False] * count
        reached = self._reached
        for module, ids in gates.items():
            def pre_hook(_module, _inputs, ids=ids):
                for i in ids:
                    if not reached[i]:
                        gate(i, 1)
                        reached[i] = True
            self._gate_hooks.append(module.register_forward_pre_hook(pre_hook))

    def _check_reached(self):
        if not self._gate_hooks:
            return
        missed = [i for i, r in enumerate(self._reached) if not r]
        if missed:
            raise ValueError(f"wfbp with model=: no submodule's forward reached parameter {missed[0]} in this step "
                             "(unused, or read outside its module), so its update could land after it was read; "
                             "leave model= out to complete every update in step()")
        self._reached[:] = [False] * len(self._reached)

    @property
    def overlaps_forward(self):
        """True when updates complete in the next forward, layer by layer (wfbp with model=)."""
        return bool(self._gate_hooks)

    @property
    def param_groups(self):
        return self._optimizer.param_groups

    def zero_grad(self, set_to_none=False):
        # Gradients live in ferry's flat buffer; None would detach them (the buffer is zeroed instead).
        self._impl.zero_grad()

    def step(self, closure=None):
        if closure is not None:
            raise ValueError("step(closure): closures are not supported")
        if not self._external and self._optimizer.param_groups[0]["lr"] != self._lr:
            raise ValueError("lr changed after the optimizer was wrapped (an lr scheduler?): ferry reads it once; "
                             "give lr_schedule= for ferry's schedules")
        self._check_reached()
        if self._external and all(bool(torch.isfinite(p.grad).all()) for p in self._params if p.grad is not None):
            # The inner step is the user's optimizer's (its state stays on this worker); ferry then
            # synchronises on its schedule. The gradients are views of ferry's flat buffer. A
            # non-finite gradient skips it, as ferry's own update skips it (docs/reliability.md).
            self._optimizer.step()
        try:
            self._impl.step()
        except ValueError as e:
            raise ValueError(_pythonic(str(e))) from None

    def finish(self):
        """Ends the run: every pending update lands and the final weights are in the parameters."""
        if not self._finished:
            self._impl.finish()
            self._finished = True
            _unfinished.discard(self)
            for h in self._gate_hooks:
                h.remove()
            self._gate_hooks = []

    def save_checkpoint(self):
        """Writes ferry's own state (weights, velocities, codec residuals, delay buffers and the
        parameter servers' shards) to checkpoint_dir/ckpt-<iterations>, atomically; every worker calls
        it after the same step. Returns that directory. The model's buffers (BatchNorm statistics) and
        anything else of the script's are the script's to torch.save next to it."""
        try:
            return self._impl.save_checkpoint()
        except ValueError as e:
            raise ValueError(_pythonic(str(e))) from None

    @property
    def iterations(self):
        """Steps done, counting those of the checkpoint resumed from."""
        return self._impl.iterations()

    @property
    def options(self):
        """The options the job runs with, resolved (canonical algorithm and codec specs, the topology
        named), by their keys in ferry's job: {"algo": ..., "codec": ..., "batch": ..., ...}."""
        return json.loads(self._impl.options())

    def metrics(self):
        return {"comm_wait_s": self._impl.comm_wait_s(), "bytes_sent": self._impl.bytes_sent(),
                "codec": self._impl.codec(), "algo": self._impl.algo()}


def _tensors(obj):
    if isinstance(obj, dict):
        return [obj[k] for k in sorted(obj)]  # one order on every worker
    items = list(obj)  # a generator (named_parameters()) is read once
    return [t for _, t in items] if items and isinstance(items[0], tuple) else items


def broadcast_parameters(params, root_rank=0):
    """Copies root_rank's tensors (a state_dict, named parameters or a list: parameters and buffers,
    e.g. BatchNorm statistics) into every worker's, in place."""
    with torch.no_grad():
        for t in _tensors(params):
            if not t.is_contiguous():
                raise ValueError("broadcast_parameters: a tensor is not contiguous")
            _C.broadcast_(t, root_rank)


def allreduce(tensor, average=True):
    """The sum (or mean) of `tensor` over every worker, as a new tensor."""
    out = tensor.detach().clone().contiguous()
    _C.allreduce_sum_(out)
    if average:
        out /= _C.side_size()  # the workers
    return out
