#!/usr/bin/python3
"""Small GGUF surgery for the bad-input CLI tests (tests/moe/bad_input_cli.sh); no dependencies.

  gguf_edit.py scale FILE TENSOR BLOCK HEX   write the f16 HEX (7E00: NaN, 7C00: Inf) as the first
                                             field (d) of block BLOCK of TENSOR's data (MXFP4: the
                                             byte HEX as its E8M0 exponent, FF: NaN)
  gguf_edit.py drop-key IN OUT KEY           copy IN to OUT without metadata key KEY
  gguf_edit.py set-string IN OUT KEY INDEX HEX   replace element INDEX of string array KEY by the bytes HEX
  gguf_edit.py set-int IN OUT KEY VALUE      set integer key KEY (u32) to VALUE (added when absent)
  gguf_edit.py set-str IN OUT KEY VALUE      set string key KEY to VALUE (added when absent)
  gguf_edit.py rename-tensor IN OUT OLD NEW  copy IN to OUT with tensor OLD named NEW (its data as it is)
"""
import struct
import sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # scalar types
FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s


def parse(data):
    """Metadata as (key, type, value, raw bytes) in file order, tensor infos, the tensor data start."""
    r = Reader(data)
    assert r.take("<I") == 0x46554747, "not a GGUF file"
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    header_end = r.pos
    kvs = []
    for _ in range(n_kv):
        start = r.pos
        key = r.string().decode()
        t = r.take("<I")
        if t == 8:
            value = r.string()
        elif t == 9:
            et, n = r.take("<I"), r.take("<Q")
            value = [r.string() if et == 8 else r.take(FMT[et]) for _ in range(n)]
            value = (et, value)
        else:
            value = r.take(FMT[t])
        kvs.append((key, t, value, data[start:r.pos]))
    tensors = {}
    for _ in range(n_tensors):
        name = r.string().decode()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        ggml_type, offset = r.take("<I"), r.take("<Q")
        tensors[name] = (dims, ggml_type, offset)
    align = next((v for k, t, v, _ in kvs if k == "general.alignment"), 32)
    data_start = (r.pos + align - 1) // align * align
    return version, header_end, kvs, r.pos, tensors, data_start


def kv_bytes(key, t, value):
    out = struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", t)
    if t == 8:
        return out + struct.pack("<Q", len(value)) + value
    if t == 9:
        et, items = value
        out += struct.pack("<IQ", et, len(items))
        for v in items:
            out += struct.pack("<Q", len(v)) + v if et == 8 else struct.pack(FMT[et], v)
        return out
    return out + struct.pack(FMT[t], value)


def rewrite(src, dst, edit, rename=None):
    """Writes DST with metadata edit(kvs) -> kvs and tensor names rename(name) -> name; tensor
    infos and data re-aligned as before."""
    data = open(src, "rb").read()
    version, header_end, kvs, infos_end, tensors, data_start = parse(data)
    kvs = edit(kvs)
    # The tensor infos (their offsets are relative to the data start), renamed.
    infos = b""
    for name, (dims, ggml_type, offset) in tensors.items():
        name = (rename or (lambda n: n))(name).encode()
        infos += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(dims))
        infos += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", ggml_type, offset)
    meta = b"".join(kv_bytes(k, t, v) for k, t, v, _ in kvs)
    head = struct.pack("<IIQQ", 0x46554747, version, len(tensors), len(kvs)) + meta + infos
    align = next((v for k, t, v, _ in kvs if k == "general.alignment"), 32)
    head += b"\0" * ((-len(head)) % align)
    open(dst, "wb").write(head + data[data_start:])


def main(argv):
    cmd = argv[1]
    if cmd == "scale":
        path, tensor, block, value = argv[2], argv[3], int(argv[4]), int(argv[5], 16)
        data = bytearray(open(path, "rb").read())
        _, _, _, _, tensors, data_start = parse(bytes(data))
        dims, ggml_type, offset = tensors[tensor]
        block_bytes = {8: 34, 2: 18, 12: 144, 14: 210, 39: 17}[ggml_type]
        field = 208 if ggml_type == 14 else 0
        struct.pack_into("<B" if ggml_type == 39 else "<H", data, data_start + offset + block * block_bytes + field, value)
        open(path, "wb").write(data)
    elif cmd == "drop-key":
        rewrite(argv[2], argv[3], lambda kvs: [kv for kv in kvs if kv[0] != argv[4]])
    elif cmd == "set-string":
        key, index, raw = argv[4], int(argv[5]), bytes.fromhex(argv[6])

        def edit(kvs):
            out = []
            for k, t, v, raw_kv in kvs:
                if k == key:
                    items = list(v[1])
                    items[index] = raw
                    v = (v[0], items)
                out.append((k, t, v, raw_kv))
            return out
        rewrite(argv[2], argv[3], edit)
    elif cmd == "set-int":
        key, value = argv[4], int(argv[5])

        def edit(kvs):
            out = [kv for kv in kvs if kv[0] != key]
            return out + [(key, 4, value, b"")]
        rewrite(argv[2], argv[3], edit)
    elif cmd == "set-str":
        key, value = argv[4], argv[5].encode()
        rewrite(argv[2], argv[3], lambda kvs: [kv for kv in kvs if kv[0] != key] + [(key, 8, value, b"")])
    elif cmd == "rename-tensor":
        old, new = argv[4], argv[5]
        rewrite(argv[2], argv[3], lambda kvs: kvs, lambda name: new if name == old else name)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
