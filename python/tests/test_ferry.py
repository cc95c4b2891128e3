"""The Python package against independent references, on 4 workers (+1 server) under mpirun.

Exactness: the worker script's data (inputs and targets in {-1, 0, 1}, initial weights multiples of
1/8 in [-1/2, 1/2], lr 2^-6, momentum 1/2, 64 rows, 2 steps) keep every gradient a sum of terms of
one granularity whose total magnitude stays below 2^24 of it (at most 2^22.9 in step 2), so any
order of summation - ferry's ring allreduce, the parameter server's worker order, or one big batch -
gives the same float32 gradient exactly. The update itself is the same float32 elementwise
arithmetic (MXNet's SGD: v = mu v - lr (rescale g + wd w); w += v) in ferry and in the reference
below. So the results are compared bit for bit, on any CPU and BLAS kernel.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sgd_worker as w  # noqa: E402

MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed")


def mpirun(np, script_args, timeout=120, script="sgd_worker.py"):
    cmd = [MPIRUN, "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [sys.executable, os.path.join(HERE, script)] + script_args
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")  # DDP tests: gloo on loopback
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def reference_weights():
    """Single-process SGD (MXNet's update, float32) on the concatenated batch of each step."""
    wt, b = w.initial_weights()
    vw, vb = torch.zeros_like(wt), torch.zeros_like(b)
    for step in range(w.STEPS):
        x, t = w.global_batch(step)
        model = torch.nn.Linear(w.IN, w.OUT)
        with torch.no_grad():
            model.weight.copy_(wt)
            model.bias.copy_(b)
        (0.5 * ((model(x) - t) ** 2).sum() / w.BATCH).backward()
        for p, v, g in ((wt, vw, model.weight.grad), (b, vb, model.bias.grad)):
            step_v = w.MOMENTUM * v - w.LR * g  # rescale 1, weight decay 0
            v.copy_(step_v)
            p.copy_(p + v)
    return wt, b


def run_and_load(tmp_path, np, algo, topology, servers=0, options=None):
    out = tmp_path / f"{algo}-{topology}.json"
    env_servers = os.environ.get("FERRY_SERVERS")
    os.environ["FERRY_SERVERS"] = str(servers)
    try:
        r = mpirun(np + servers, [str(out), algo, topology, json.dumps(options or {})])
    finally:
        if env_servers is None:
            os.environ.pop("FERRY_SERVERS")
        else:
            os.environ["FERRY_SERVERS"] = env_servers
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """A run several tests compare against, made once per module: reference_run(key, make), with
    make(directory) returning the run's result."""
    made = {}

    def get(key, make):
        if key not in made:
            made[key] = make(tmp_path_factory.mktemp("reference"))
        return made[key]
    return get


def test_reference_is_exact_in_float32():
    # The premise of the bitwise comparisons: the float32 gradient of the concatenated batch
    # equals the float64 one.
    wt, b = w.initial_weights()
    x, t = w.global_batch(0)
    g32 = ((x @ wt.t() + b - t).t() @ x) / w.BATCH
    g64 = ((x.double() @ wt.double().t() + b.double() - t.double()).t() @ x.double()) / w.BATCH
    assert torch.equal(g32.double(), g64)


@pytest.mark.parametrize("topology,servers", [("allreduce", 0), ("ps", 1)])
def test_ssgd_equals_single_process_sgd_on_the_concatenated_batch(tmp_path, topology, servers):
    got = run_and_load(tmp_path, 4, "ssgd", topology, servers)
    wt, b = reference_weights()
    assert not torch.equal(wt, w.initial_weights()[0])  # the steps moved the weights
    assert torch.equal(torch.tensor(got["weight"]), wt), (got["weight"], wt.tolist())
    assert torch.equal(torch.tensor(got["bias"]), b)
    assert got["metrics"]["codec"].split(":")[0] == "none"
    assert got["metrics"]["bytes_sent"] > 0


# WFBP is S-SGD's arithmetic with the communication started in backward and, given model=, each
# update completed in the next forward by the module that reads it: the same weights bit for bit.
@pytest.mark.parametrize("topology,servers,gate", [("allreduce", 0, True), ("ps", 1, True), ("allreduce", 0, False)])
def test_wfbp_equals_single_process_sgd(tmp_path, topology, servers, gate):
    got = run_and_load(tmp_path, 4, "wfbp", topology, servers, {"_gate": gate, "_steps": 2})
    wt, b = reference_weights()
    assert torch.equal(torch.tensor(got["weight"]), wt) and torch.equal(torch.tensor(got["bias"]), b)
    assert got["overlapped"] is gate


# A script that never calls finish() on a parameter server: ferry's exit handler finishes the
# optimizer, so the servers see every worker end and the job exits 0 (a hang fails by timeout).
@pytest.mark.parametrize("algo", ["ssgd", "ssdsgd"])
def test_a_ps_script_without_finish_ends(tmp_path, algo):
    got = run_and_load(tmp_path, 4, algo, "ps", 1, {"_finish": False})
    assert got["weight"] != [[float(v) for v in row] for row in w.initial_weights()[0].tolist()]


@pytest.mark.parametrize("algo,options", [
    ("ssdsgd", {"delay_steps": 1, "local_update": "sgd"}),  # SSD-SGD with k = 1 and GLU off
    ("cdsgd", {"codec": "none"}),                             # CD-SGD without compression
])
def test_delayed_algorithms_reduce_to_odsgd(tmp_path, reference_run, algo, options):
    base = {"warmup_steps": 0}
    ref = reference_run(("odsgd", "ps"), lambda d: run_and_load(d, 4, "odsgd", "ps", 1, base))
    got = run_and_load(tmp_path, 4, algo, "ps", 1, dict(base, **options))
    assert got["weight"] == ref["weight"] and got["bias"] == ref["bias"]


# An algorithm's own options given as keyword arguments join its spec: the strategy runs with them
# (localsgd's sync_every, a key of its spec, not a field of the delayed algorithms' options).
def test_keyword_options_join_the_algorithms_spec(tmp_path):
    got = run_and_load(tmp_path, 2, "localsgd", "allreduce", 0, {"sync_every": 2, "_steps": 2})
    assert got["metrics"]["algo"] == "localsgd:sync_every=2,post_local=0", got["metrics"]


# A strategy from a plugin (tests/train/plugin/scaled_sgd_plugin.cc), its option `scale` read in its
# own file only: the keyword argument joins the spec, reaches the strategy on the workers and the
# job the servers read (they refuse an unknown algorithm), and the checkpoint. Scaling the gradient
# by 1/2 and doubling the lr is exact in float32, so the run is the exact reference's.
PLUGIN = os.environ.get("FERRY_TEST_PLUGIN", "")


@pytest.mark.skipif(not os.path.isfile(PLUGIN), reason="FERRY_TEST_PLUGIN (the test plugin's path) not given")
def test_a_plugin_strategys_option_reaches_the_servers_and_the_checkpoint(tmp_path):
    opts = {"_plugin": PLUGIN, "_lr": 2 * w.LR}
    got = run_and_load(tmp_path, 4, "test-scaled", "ps", 1, dict(opts, scale=0.5))
    wt, b = reference_weights()
    assert torch.equal(torch.tensor(got["weight"]), wt) and torch.equal(torch.tensor(got["bias"]), b)
    assert got["metrics"]["algo"] == "test-scaled:scale=0.5", got["metrics"]
    unscaled = run_and_load(tmp_path, 4, "test-scaled", "ps", 1, dict(opts, scale=1))
    assert not torch.equal(torch.tensor(unscaled["weight"]), wt)  # the option is what made them equal
    ckpt = tmp_path / "ckpt"
    run_and_load(tmp_path, 4, "test-scaled", "ps", 1, dict(opts, scale=0.5, _steps=1, _save=True,
                                                            checkpoint_dir=str(ckpt)))
    with open(ckpt / "ckpt-00000001" / "meta.json") as f:
        assert json.load(f)["config"]["algo"] == "test-scaled:scale=0.5"
    resumed = run_and_load(tmp_path, 4, "test-scaled", "ps", 1, dict(opts, scale=0.5, resume=str(ckpt)))
    assert resumed["weight"] == got["weight"] and resumed["bias"] == got["bias"]
    os.environ["FERRY_SERVERS"] = "1"
    try:
        r = mpirun(5, [str(tmp_path / "other.json"), "test-scaled", "ps",
                       json.dumps(dict(opts, scale=0.25, resume=str(ckpt)))])
    finally:
        del os.environ["FERRY_SERVERS"]
    assert r.returncode != 0
    assert "the checkpoint is of algo test-scaled:scale=0.5, this run has test-scaled:scale=0.25" in r.stderr, r.stderr


def test_a_bad_plugin_is_an_error_naming_it(tmp_path):
    import ferry
    with pytest.raises(OSError, match="no such file"):
        ferry.load_plugin(tmp_path / "none.so")
    with pytest.raises(ValueError, match="defines no ferry_plugin_register"):
        ferry.load_plugin(ferry._C.__file__)  # a shared library, not a plugin


@pytest.mark.parametrize("topology,servers", [("allreduce", 0), ("ps", 1)])
def test_a_killed_worker_ends_the_job(tmp_path, topology, servers):
    # Worker 2 dies of SIGKILL in step 1; every other rank (blocked in a collective or a pull) must
    # end: mpirun stops the job (a hang would exceed the timeout and fail the test).
    os.environ["FERRY_TEST_KILL_RANK"] = "2"
    os.environ["FERRY_SERVERS"] = str(servers)
    try:
        r = mpirun(4 + servers, [str(tmp_path / "dead.json"), "ssgd", topology], timeout=90)
    finally:
        del os.environ["FERRY_TEST_KILL_RANK"]
        del os.environ["FERRY_SERVERS"]
    assert r.returncode != 0
    assert not (tmp_path / "dead.json").exists()


# A run of 4 steps against one of 2 steps, a checkpoint, and a new job resuming from it for steps 2
# and 3: the weights must be bit for bit the same, so every piece of state (weights, velocities,
# error-feedback residuals, SSD-SGD's delayed pulls and GLU direction, the server's shard) was
# saved and restored. The twobit threshold 2^-3 keeps every decoded value one granularity, so the
# server's sums are exact whatever the arrival order of the pushes.
@pytest.mark.parametrize("algo,topology,servers,extra", [
    ("ssdsgd", "ps", 1, {"delay_steps": 2, "warmup_steps": 1}),
    ("ssgd", "allreduce", 0, {}),
])
def test_resuming_from_a_checkpoint_continues_the_run_exactly(tmp_path, algo, topology, servers, extra):
    base = dict(extra, codec="twobit:threshold=0.125", _steps=4)
    straight = run_and_load(tmp_path, 4, algo, topology, servers, base)
    ckpt = tmp_path / "ckpt"
    first = run_and_load(tmp_path, 4, algo, topology, servers, dict(base, _steps=2, _save=True, checkpoint_dir=str(ckpt)))
    assert (ckpt / "ckpt-00000002" / "meta.json").exists()
    assert first["weight"] != straight["weight"]
    resumed = run_and_load(tmp_path, 4, algo, topology, servers, dict(base, resume=str(ckpt)))
    assert resumed["weight"] == straight["weight"] and resumed["bias"] == straight["bias"]
    # Another algorithm cannot continue it: ValueError naming the setting.
    other = "odsgd" if algo == "ssdsgd" else "localsgd"
    out = tmp_path / "other.json"
    os.environ["FERRY_SERVERS"] = str(servers)
    try:
        r = mpirun(4 + servers, [str(out), other, topology, json.dumps({"resume": str(ckpt), "_steps": 4})])
    finally:
        del os.environ["FERRY_SERVERS"]
    assert r.returncode != 0 and f"the checkpoint is of algo {algo}, this run has {other}" in r.stderr, r.stderr


FERRY_BIN = os.environ.get("FERRY_BIN") or os.path.join(HERE, "..", "..", "build", "default", "apps", "ferry")
FASHION = "/usr/share/datasets/fashion-mnist"


# The same model, seed, data and optimizer through `ferry train` (C++) and through Python (the cnn
# written in PyTorch, ferry.data's batches): the final weights must be the same bit for bit. Both
# run the same ATen kernels with one thread per rank and the same summation orders (ring allreduce;
# the server adds the workers' pushes in a fixed order only when they are exact, so the ps case
# uses codec twobit with a dyadic threshold, whose decoded values sum exactly in any order).
@pytest.mark.skipif(not os.path.isdir(FASHION), reason=f"{FASHION} absent (Debian's dataset-fashion-mnist)")
@pytest.mark.skipif(not os.access(FERRY_BIN, os.X_OK), reason=f"no ferry binary at {FERRY_BIN}")
@pytest.mark.parametrize("algo,topology,servers,extra", [
    ("ssgd", "allreduce", 0, []),
    ("ssdsgd", "ps", 1, ["--codec", "twobit:threshold=0.001953125"]),
    # DiLoCo's inner SGD is ferry's when the optimizer is a torch.optim.SGD; a fragment in flight
    # (overlap) and the mixing too
    ("diloco:inner_steps=2", "allreduce", 0, []),
    ("streaming-diloco:inner_steps=4,fragments=2,overlap=1,alpha=0.5", "allreduce", 0, []),
])
def test_python_and_ferry_train_give_the_same_weights(tmp_path, algo, topology, servers, extra):
    steps, batch, limit, seed, workers = 6, 32, 512, 3, 4  # 4 steps an epoch: the second epoch's order too
    cmd = [FERRY_BIN, "train", "--model", "cnn", "--algo", algo, "--topology", topology, "--np", str(workers),
           "--servers", str(servers), "--batch", str(batch), "--train-limit", str(limit), "--test-limit", "64",
           "--epochs", "2", "--max-steps", str(steps), "--seed", str(seed), "--threads", "1", "--no-progress",
           "--optimizer", "sgd", "--out", str(tmp_path / "cxx")] + extra  # the Python side's torch.optim.SGD
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(tmp_path / "cxx" / "summary.json") as f:
        want = json.load(f)["weights_fnv1a"]
    out = tmp_path / "py.json"
    os.environ["FERRY_SERVERS"] = str(servers)
    try:
        args = [str(out), algo, topology, str(steps), str(batch), str(limit), str(seed)]
        p = mpirun(workers + servers, args + ([extra[1]] if extra else []), timeout=300, script="cnn_worker.py")
    finally:
        del os.environ["FERRY_SERVERS"]
    assert p.returncode == 0, p.stdout + p.stderr
    with open(out) as f:
        assert json.load(f)["weights_fnv1a"] == want


def run_ddp(tmp_path, mode):
    out = tmp_path / (mode.replace(":", "_").replace(",", "_").replace("=", "_").replace("@", "_") + ".json")
    store = tmp_path / (out.stem + ".store")
    r = mpirun(4, [str(out), mode, str(store)], script="ddp_worker.py")
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out) as f:
        return json.load(f)


# With the exact data every sum of gradients (DDP's gloo allreduce, the hook's rank-order sum of
# decoded payloads, ferry's ring) is exact, and the twobit threshold 2^-4 makes every decoded value
# a multiple of it: the runs must agree bit for bit.
@pytest.mark.parametrize("plain,hooked", [
    ("plain", "hook:none"),
    ("ferry:twobit:threshold=0.0625", "hook:twobit:threshold=0.0625"),
    ("plain", "hook@100Mbps,50us:none"),  # the same over ferry's MPI workers and emulated link
    ("ferry:twobit:threshold=0.0625", "hook@100Mbps,50us:twobit:threshold=0.0625"),
])
def test_ddp_hook_equals_its_reference(tmp_path, reference_run, plain, hooked):
    ref = reference_run(("ddp", plain), lambda d: run_ddp(d, plain))
    got = run_ddp(tmp_path, hooked)
    assert got["weight"] == ref["weight"] and got["bias"] == ref["bias"]
    if "@" in hooked:
        assert got["link_bytes_sent"] > 0  # the hook's traffic went through ferry's link
    assert got["weight"] != [[float(v) for v in row] for row in w.initial_weights()[0].tolist()]


def test_bad_codec_spec_is_a_value_error():
    import ferry.torch.hooks
    with pytest.raises(ValueError, match="fourbit"):
        ferry.torch.hooks.compress("fourbit")


def test_hook_spec_puts_the_momentum_after_the_hook():
    import ferry.torch.hooks as hooks
    assert hooks._hook_spec("twobit") == "twobit:threshold=0.5,momentum_at=server,raw_1d=1"
    assert hooks._hook_spec("randomk:ratio=0.05") == "randomk:ratio=0.05,seed=0,ef=1,momentum_at=server,raw_1d=1"
    assert hooks._hook_spec("fp16") == "fp16:ef=0,raw_1d=1"  # no error feedback: nothing to place
    for spec, key in [("topk:momentum_at=worker", "momentum_at=worker"), ("randomk:ef21=1", "ef21=1")]:
        with pytest.raises(ValueError, match=key + ".*DistributedOptimizer"):
            hooks.compress(spec)


def test_ddp_hook_equals_the_cpp_allreduce_path_for_every_codec(tmp_path):
    # The hook's average of every bucket, on 2 workers over gloo, equals `ferry train`'s allreduce
    # codecs (TensorAllreduceCodecs, through ferry's DistributedOptimizer over MPI) on the same
    # gradients, bit for bit, step after step (ddp_hook_codecs_worker.py).
    from ferry import _C
    out = tmp_path / "codecs.json"
    r = mpirun(2, [str(out), str(tmp_path / "store")], script="ddp_hook_codecs_worker.py")
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out) as f:
        got = json.load(f)
    assert sorted(got) == sorted(n for n in _C.codec_names() if not _C.codec_is_identity(n))
    for name, result in got.items():
        assert result["mismatches"] == [] and result["compared"] == 3 * 6, (name, result)
        assert result["lossy"], name  # the codec did compress: the test could tell the paths apart
        assert result["buckets"][0] == 1 and min(result["buckets"][1:]) > 1, result  # DDP regrouped them


class _OneWorker:
    """A one-worker transport for the hook's exchange whose allgather keeps the message it is given
    and returns it through `spoil` (which may cut it short or change it)."""
    world, rank = 1, 0

    def __init__(self, spoil=lambda message: message):
        self.spoil, self.sent = spoil, []

    def allreduce_(self, t):
        pass

    def allgather(self, payload):
        self.sent.append(payload.clone())
        return [self.spoil(payload)]


def _average_alone(net, spec, grads):
    """The hook's exchange (C++) of one bucket holding `grads`, on one worker over `net`."""
    from ferry import _C
    params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    buffer = torch.cat([g.reshape(-1) for g in grads])
    return _C.DdpHook(spec).take(buffer, params, grads, net.rank).average(net.world, net.allreduce_, net.allgather)


def test_hook_messages_are_packed_and_bounds_checked_by_cpp():
    # The hook's message of a bucket: length-prefixed records (compress/payload_records.h, as
    # `ferry train` sends), one per tensor; one cut short, whose length runs past its end or with
    # bytes after its last record is a ValueError naming the worker. (2-D: 1-D parameters are
    # allreduced raw, raw_1d=1.)
    grads = [torch.ones(1, 5), torch.ones(2, 3), torch.ones(11, 1)]
    net = _OneWorker()
    _average_alone(net, "fp16", grads)
    message, at, records = net.sent[0].tolist(), 0, 0
    while at < len(message):
        at += 8 + int.from_bytes(bytes(message[at:at + 8]), sys.byteorder)
        records += 1
    assert at == len(message) and records == 3

    def too_long(m):
        m = m.clone()
        m[:8] = torch.tensor([1000], dtype=torch.int64).view(torch.uint8)
        return m
    for spoil, error in [(lambda m: m[:-1], r"record 2 of 3 \(\d+ bytes at byte \d+\) runs past the end"),
                         (too_long, r"record 0 of 3 \(1000 bytes at byte 8\) runs past the end"),
                         (lambda m: torch.cat([m, torch.zeros(3, dtype=torch.uint8)]),
                          r"3 bytes after the last of its 3 records$")]:
        with pytest.raises(ValueError, match=r"^the DDP hook's message of worker 0: " + error):
            _average_alone(_OneWorker(spoil), "fp16", grads)
    with pytest.raises(ValueError, match="expected float32 CPU gradients"):
        _average_alone(_OneWorker(), "fp16", [torch.ones(3, dtype=torch.float64)])


def test_hook_exchange_decodes_through_the_cpp_records_and_refuses_a_cut_message():
    grad = torch.tensor([[1.0, -1.0], [0.25, 0.0]])
    assert _average_alone(_OneWorker(), "twobit:threshold=0.5", [grad]).tolist() == [0.5, -0.5, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"^the DDP hook's message of worker 0: record 0 of 1 .* runs past the end"):
        _average_alone(_OneWorker(lambda m: m[:-1]), "twobit:threshold=0.5", [grad])


def test_the_hook_asks_the_registry_which_codec_is_the_identity():
    from ferry import _C
    assert _C.codec_is_identity("none") and _C.codec_is_identity("none:ef=1")
    assert not any(_C.codec_is_identity(name) for name in _C.codec_names() if name != "none")
    with pytest.raises(ValueError, match="fourbit"):
        _C.codec_is_identity("fourbit")


def _held_by_cpp_only(t):
    """A holder of `t` outside Python, as a process group's work is: a torch Future (C++) set to it."""
    held = torch.futures.Future()
    held.set_result(t)
    return held


def test_hook_exit_waits_until_the_group_lets_go_of_its_tensors():
    # The hook's tensors are dropped by Python when a collective returns, but gloo's thread may hold
    # them a moment longer; if that thread drops the last reference once the interpreter is
    # finalising, it cannot take the GIL and the process aborts. At exit the hook waits for them.
    import threading
    import weakref
    import ferry.torch.hooks as hooks
    t = torch.zeros(28, dtype=torch.uint8)
    hooks._handed_to_group.add(t)
    holder = [_held_by_cpp_only(t)]
    alive = weakref.ref(t)
    del t
    assert alive() is not None  # held by C++ only: still among the handed tensors
    letting_go = threading.Timer(0.3, holder.clear)  # the "group" lets go 0.3 s later, on its own thread
    letting_go.start()
    hooks._wait_for_the_group_at_exit()
    assert alive() is None and holder == []
    letting_go.join()


def test_hook_exit_wait_is_bounded_and_says_so(capsys):
    import weakref
    import ferry.torch.hooks as hooks
    t = torch.zeros(4)
    hooks._handed_to_group.add(t)
    holder = _held_by_cpp_only(t)
    alive = weakref.ref(t)
    del t
    hooks._wait_for_the_group_at_exit(timeout_s=0.05)
    assert "the process group still holds 1 of the hook's tensors 0.05 s into exit" in capsys.readouterr().err
    assert alive() is not None
    del holder
    assert alive() is None


def run_alone(script, last_line):
    """Runs `script` in a fresh Python (a world of one rank) and checks it printed `last_line`."""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert last_line in r.stdout, r.stdout + r.stderr


def test_bad_options_raise_value_error_naming_the_option(tmp_path):
    run_alone(BAD_OPTIONS, "all bad options refused")


BAD_OPTIONS = r'''
import torch, ferry, ferry.torch as ft
ferry.init()
m = torch.nn.Linear(2, 2)
sgd = torch.optim.SGD(m.parameters(), lr=0.1)
cases = [
    (dict(algo="sgdx"), "unknown --algo 'sgdx'".replace("--algo", "algo")),
    (dict(algo="ssdsgd", delay_steps=0), "delay_steps must be at least 1"),
    (dict(algo="cdsgd", correction_steps=0), "correction_steps must be at least 1"),
    (dict(codec="fourbit"), "invalid codec 'fourbit'"),
    (dict(link="1Gbs"), "invalid link '1Gbs'"),
    (dict(delay_stepz=3), "unknown option 'delay_stepz'"),
    (dict(algo="ssgd", topology="ps"), "topology ps needs servers >= 1"),
    (dict(algo="wfbp", codec="twobit"), "wfbp does not compress"),
    (dict(algo="diloco", fragments=2), "unknown option 'fragments'"),  # keyword arguments join the spec
    (dict(algo="diloco:inner_steps=0"), "inner_steps must be at least 1"),
]
for kwargs, want in cases:
    try:
        ft.DistributedOptimizer(sgd, **kwargs)
    except ValueError as e:
        assert want in str(e), (kwargs, str(e))
    else:
        raise SystemExit(f"accepted {kwargs}")
try:  # an external inner optimizer (torch's AdamW under diloco) keeps its own learning rate
    ft.DistributedOptimizer(torch.optim.AdamW(m.parameters()), algo="diloco", inner_lr_scale=0.5)
except ValueError as e:
    assert "inner_lr_scale scales ferry's own inner optimizer" in str(e), str(e)
else:
    raise SystemExit("accepted inner_lr_scale with an external optimizer")
for bad in (torch.optim.Adam(m.parameters()), torch.optim.SGD(m.parameters(), lr=0.1, nesterov=True, momentum=0.9)):
    try:
        ft.DistributedOptimizer(bad)
    except ValueError as e:
        assert "optimizer" in str(e), str(e)
    else:
        raise SystemExit(f"accepted {bad}")
class Direct(torch.nn.Module):  # reads its child's weights without calling the child
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
    def forward(self, x):
        return torch.nn.functional.linear(x, self.lin.weight, self.lin.bias)
d = Direct()
opt = ft.DistributedOptimizer(torch.optim.SGD(d.parameters(), lr=0.1), algo="wfbp", model=d)
d(torch.ones(1, 2)).sum().backward()
try:
    opt.step()
except ValueError as e:
    assert "no submodule's forward reached parameter 0" in str(e), str(e)
else:
    raise SystemExit("wfbp accepted a parameter read outside its module")
print("all bad options refused")
'''


# The keywords that are options of ferry train come from ferry's option table: the test-only
# test_option, declared there alone, is one; the job runs with it, typed and checked in C++.
def test_option_table_keywords_reach_the_job(tmp_path):
    run_alone(OPTION_KEYWORDS, "option keywords ok")


OPTION_KEYWORDS = r'''
import pathlib, torch, ferry, ferry.torch as ft
ferry.init()
keywords = ft.option_keywords()
for k in ("topology", "codec", "compress_pull", "link", "checkpoint_dir", "resume", "keep_checkpoints", "batch",
          "test_option"):
    assert k in keywords, (k, keywords)
m = torch.nn.Linear(2, 2)
opt = ft.DistributedOptimizer(torch.optim.SGD(m.parameters(), lr=0.5), algo="localsgd", sync_every=3, test_option=7,
                              batch=8, checkpoint_dir=pathlib.Path("unused"), keep_checkpoints=None)
o = opt.options
assert o["test_option"] == 7 and o["batch"] == 8 and o["keep_checkpoints"] == 2, o
assert o["algo"] == opt.metrics()["algo"] and "sync_every=3" in o["algo"] and o["topology"] == "allreduce", o
assert o["lr"] == 0.5 and o["codec"] == opt.metrics()["codec"], o
opt.finish()
for kwargs, want in [(dict(test_option="7"), "test_option=\"7\": expected an int"),
                     (dict(keep_checkpoints=True), "keep_checkpoints=true: expected an int"),
                     (dict(batch=0), "batch must be at least 1")]:
    try:
        ft.DistributedOptimizer(torch.optim.SGD(m.parameters(), lr=0.5), **kwargs)
    except ValueError as e:
        assert want in str(e), (kwargs, str(e))
    else:
        raise SystemExit(f"accepted {kwargs}")
print("option keywords ok")
'''


# DiLoCo with the user's own AdamW as the inner optimizer, one worker, one outer step of outer SGD
# with lr 1 and no momentum: the global weights are θ0 − (θ0 − θ1) for θ1 what torch's AdamW alone
# reaches in H steps: within one rounding of each subtraction, |w − θ1| ≤ u·(|θ0 − θ1| + |θ1|).
def test_diloco_steps_the_users_own_optimizer(tmp_path):
    run_alone(DILOCO_ADAMW, "diloco with adamw ok")


# Two copies of one small model and its data, for a ferry optimizer against torch's own.
TWO_MODELS = r'''
import torch, ferry, ferry.torch as ft
ferry.init()
torch.manual_seed(0)
def model():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
a, b = model(), model()
b.load_state_dict(a.state_dict())
x, y = torch.randn(30, 8), torch.randn(30, 4)
def train(pairs, steps=3):
    for i in range(steps):
        for m, o in pairs:
            o.zero_grad()
            torch.nn.functional.mse_loss(m(x[i::3]), y[i::3]).backward()
            o.step()
'''


DILOCO_ADAMW = TWO_MODELS + r'''
inner = torch.optim.AdamW(a.parameters(), lr=0.01, weight_decay=0.1)
opt = ft.DistributedOptimizer(inner, algo="diloco", inner_steps=3, outer_lr=1, outer_momentum=0)
ref = torch.optim.AdamW(b.parameters(), lr=0.01, weight_decay=0.1)
theta0 = [p.detach().clone() for p in a.parameters()]
train(((a, opt), (b, ref)))
opt.finish()
u = 2.0 ** -24
for p0, p, q in zip(theta0, a.parameters(), b.parameters()):
    assert not torch.equal(p0, q)
    bound = 1.001 * u * ((p0 - q).abs() + q.abs())
    assert bool(((p.detach() - q.detach()).abs() <= bound).all()), (p - q).abs().max()
assert all("exp_avg" in inner.state[p] for p in a.parameters())  # its state stays on the worker
print("diloco with adamw ok")
'''


# A torch.optim.AdamW wrapped for an algorithm whose workers step their own optimizer runs as
# ferry's AdamW (--optimizer adamw with its lr, betas, eps, weight_decay): S-SGD on one worker
# follows torch's AdamW within float rounding; lr_schedule= reaches the job (canonical); an
# algorithm that steps SGD by definition refuses AdamW by name.
def test_adamw_and_lr_schedule_reach_ferrys_own_optimizer(tmp_path):
    run_alone(SSGD_ADAMW, "ssgd with adamw ok")


SSGD_ADAMW = TWO_MODELS + r'''
opt = ft.DistributedOptimizer(torch.optim.AdamW(a.parameters(), lr=0.01, betas=(0.8, 0.9), weight_decay=0.1),
                              algo="ssgd")
assert opt.options["optimizer"] == "adamw:beta1=0.8,beta2=0.9,eps=1e-08", opt.options
ref = torch.optim.AdamW(b.parameters(), lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)
train(((a, opt), (b, ref)))
opt.finish()
for p, q in zip(a.parameters(), b.parameters()):
    assert torch.allclose(p.detach(), q.detach(), rtol=1e-5, atol=1e-7), (p - q).abs().max()
m = torch.nn.Linear(2, 2)
opt = ft.DistributedOptimizer(torch.optim.SGD(m.parameters(), lr=0.5), algo="localsgd",
                              lr_schedule="cosine:warmup_steps=2,steps=10")
assert opt.options["lr_schedule"] == "cosine:warmup_steps=2,min_ratio=0.1,steps=10", opt.options
assert opt.options["optimizer"] == "sgd", opt.options
opt.finish()
for kwargs, want in [(dict(algo="wfbp"), "optimizer adamw:beta1=0.9,beta2=0.95,eps=1e-08: algo wfbp"),
                     (dict(algo="ssgd", lr_schedule="cosine"), "lr_schedule cosine decays over max_steps")]:
    try:
        ft.DistributedOptimizer(torch.optim.AdamW(m.parameters(), betas=(0.9, 0.95)), **kwargs)
    except ValueError as e:
        assert want in str(e), (kwargs, str(e))
    else:
        raise SystemExit(f"accepted {kwargs}")
print("ssgd with adamw ok")
'''


def test_broadcast_reads_every_tensor_of_a_generator():
    # model.named_parameters() is a generator: peeking at its first item must not drop it.
    import ferry.torch as ft
    m = torch.nn.Linear(2, 3)
    assert [t.shape for t in ft._tensors(m.named_parameters())] == [(3, 2), (3,)]
    assert [t.shape for t in ft._tensors(m.state_dict())] == [(3,), (3, 2)]  # sorted by key: bias, weight
    assert len(ft._tensors(m.parameters())) == 2
