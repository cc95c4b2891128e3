#!/usr/bin/env python3
"""How much of layer l+1's routing the state before its attention already holds.

LLaPor in hidden mode (and next-gate) predict layer l+1's experts from the residual stream that
enters layer l's MoE: they miss layer l's expert output and layer l+1's attention. This script
measures, on held-out text of a ferry model (its own float32 Mixtral forward, written from Hugging
Face's modeling_mixtral.py), the next-layer recall@k of the model's own router of layer l+1
applied to
  (a) the residual entering layer l's MoE (next-gate, what the engine predicts from today),
  (b) the residual leaving layer l (after its MoE, before layer l+1's attention: "pre-attention"),
and the share of (token, layer) whose k-th and (k+1)-th router probabilities lie within 0.01, 0.02,
0.05 (near ties that a small change of the input flips; a predictor that cannot resolve such a
margin from its inputs gets one of the k experts wrong half the time there, so its recall is at
most 1 - share / (2k)). Prints one table and writes ceiling.json.

  /usr/bin/python3 bench/moe_predict/ceiling.py runs/moe-tiny [--sequences 32 --tokens 128 --out DIR]
"""
import argparse
import json
import math
import os
import struct
import sys

import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit(f"ceiling.py: tensor {name} is {info['dtype']}, only F32 is read")
        a, b = info["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).view(info["shape"])
    return out


def heldout_text(corpus, fraction, max_bytes=8 << 20):
    """ferry's corpus (src/moe/model/corpus.cc): sorted *.py outside test folders, files over 1 MiB
    skipped, joined by a blank line, cut at max_bytes; the held-out part is the tail."""
    files = []
    for root, _, names in os.walk(corpus):
        for n in names:
            p = os.path.join(root, n)
            if n.endswith(".py") and "/test" not in p and os.path.getsize(p) <= (1 << 20):
                files.append(p)
    text = bytearray()
    for p in sorted(files):
        if len(text) >= max_bytes:
            break
        with open(p, "rb") as f:
            text += f.read() + b"\n\n"
    text = bytes(text[:max_bytes])
    return text[len(text) - int(len(text) * fraction):]


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def forward_states(cfg, w, tokens):
    """Per layer: the router input (post-attention residual, normed), the residual entering the
    MoE and the residual leaving the layer; tokens [T]."""
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim", H // nh)
    eps, k_top, E = cfg["rms_norm_eps"], cfg["num_experts_per_tok"], cfg["num_local_experts"]
    theta = cfg.get("rope_theta", 1e6)
    T = tokens.shape[0]
    inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    freqs = torch.arange(T, dtype=torch.float32)[:, None] * inv[None]
    emb = torch.cat([freqs, freqs], -1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.full((T, T), float("-inf")).triu(1)
    x = w["model.embed_tokens.weight"][tokens]
    states = []
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, nh, D).transpose(0, 1)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, nkv, D).transpose(0, 1)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, nkv, D).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(nh // nkv, 0), v.repeat_interleave(nh // nkv, 0)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + mask, -1) @ v
        x = x + att.transpose(0, 1).reshape(T, nh * D) @ w[p + "self_attn.o_proj.weight"].T
        entering = x
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        moe = p + "block_sparse_moe."
        probs = torch.softmax(m @ w[moe + "gate.weight"].T, -1)
        top_w, top_i = probs.topk(k_top, -1)
        top_w = top_w / top_w.sum(-1, keepdim=True)
        out = torch.zeros_like(m)
        for e in range(E):
            rows, slot = (top_i == e).nonzero(as_tuple=True)
            if len(rows) == 0:
                continue
            pe = moe + f"experts.{e}."
            hm = m[rows]
            y = (torch.nn.functional.silu(hm @ w[pe + "w1.weight"].T) * (hm @ w[pe + "w3.weight"].T)) @ w[pe + "w2.weight"].T
            out.index_add_(0, rows, y * top_w[rows, slot][:, None])
        x = x + out
        states.append({"entering": entering, "leaving": x, "probs": probs, "top": top_i})
    return states


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--sequences", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    cfg_path, st_path = os.path.join(a.model, "config.json"), os.path.join(a.model, "model.safetensors")
    for p in (cfg_path, st_path):
        if not os.path.isfile(p):
            sys.exit(f"ceiling.py: {p} is missing")
    cfg = json.load(open(cfg_path))
    if cfg.get("model_type") != "mixtral" or cfg.get("ferry_tokenizer") != "byte":
        sys.exit("ceiling.py: expects a ferry byte-token Mixtral model (ferry moe pretrain)")
    pre = json.load(open(os.path.join(a.model, "pretrain.json"))) if os.path.isfile(os.path.join(a.model, "pretrain.json")) else {}
    w = read_safetensors(st_path)
    text = heldout_text(pre.get("corpus", "/usr/lib/python3.11"), 0.05)
    need = a.sequences * a.tokens
    if len(text) < need:
        sys.exit(f"ceiling.py: held-out text has {len(text)} bytes, {need} needed")
    L, k, eps = cfg["num_hidden_layers"], cfg["num_experts_per_tok"], cfg["rms_norm_eps"]
    hits = {"next-gate": [0] * (L - 1), "pre-attention": [0] * (L - 1)}
    eps_list = (0.01, 0.02, 0.05)
    near_ties, total = {e: [0] * L for e in eps_list}, [0] * L
    n = 0
    torch.set_num_threads(1)
    with torch.no_grad():
        for s in range(a.sequences):
            chunk = text[s * len(text) // a.sequences:][:a.tokens]
            tokens = torch.tensor(list(chunk), dtype=torch.long)
            st = forward_states(cfg, w, tokens)
            for l in range(L):
                sp = st[l]["probs"].sort(-1, descending=True).values
                for e in eps_list:
                    near_ties[e][l] += int(((sp[:, k - 1] - sp[:, k]) < e).sum())
                total[l] += tokens.shape[0]
            for l in range(L - 1):
                nxt = f"model.layers.{l + 1}."
                gate, norm = w[nxt + "block_sparse_moe.gate.weight"], w[nxt + "post_attention_layernorm.weight"]
                truth = st[l + 1]["top"]
                for name, src in (("next-gate", st[l]["entering"]), ("pre-attention", st[l]["leaving"])):
                    pred = (rms_norm(src, norm, eps) @ gate.T).topk(k, -1).indices
                    hits[name][l] += int((pred[:, :, None] == truth[:, None, :]).any(-1).sum())
            n += tokens.shape[0]
    rows = []
    print(f"held-out: {a.sequences} x {a.tokens} bytes; next-layer recall@{k} of layer l+1's own router")
    print("| predictor input | " + " | ".join(f"l={l}->{l + 1}" for l in range(L - 1)) + " | pooled |")
    print("|---|" + "---|" * L)
    result = {"sequences": a.sequences, "tokens": a.tokens, "k": k}
    for name in ("next-gate", "pre-attention"):
        per = [h / (n * k) for h in hits[name]]
        pooled = sum(hits[name]) / (n * k * (L - 1))
        print(f"| {name} | " + " | ".join(f"{x:.3f}" for x in per) + f" | {pooled:.3f} |")
        result[name] = {"per_layer": per, "pooled": pooled}
    # A near tie of the k-th and (k+1)-th expert is a coin flip for a predictor that cannot resolve
    # that margin from its inputs: half the time one of the k slots is wrong, recall 1 - 1/(2k).
    result["near_ties"] = {}
    for e in eps_list:
        ties = [t / max(1, c) for t, c in zip(near_ties[e], total)]
        share = sum(near_ties[e][1:]) / max(1, sum(total[1:]))  # the layers predicted (1 ..)
        print(f"near ties (k-th and (k+1)-th router probability within {e}): per layer " +
              ", ".join(f"{x:.3f}" for x in ties) +
              f"; layers 1..: {share:.3f} -> recall ceiling for a predictor blind to that margin {1 - share / (2 * k):.3f}")
        result["near_ties"][str(e)] = {"per_layer": ties, "share_predicted_layers": share, "ceiling": 1 - share / (2 * k)}
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "ceiling.json"), "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
