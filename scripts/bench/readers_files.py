"""The synthetic checkpoints of scripts/bench/readers (standard library only):
    python3 readers_files.py DIR N DEEPSEEK_V3_CONFIG
DIR/st1 and DIR/st2: one safetensors file of N and of 2N tensors beside a DeepSeek-V3 config.json;
DIR/g1.gguf and DIR/g2.gguf: a small Llama in GGUF with N and 2N tensors; DIR/v3: a DeepSeek-V3
snapshot (config, model.safetensors.index.json, 163 shards of its 91,991 tensor names).
Every tensor holds one element (its real dtype, shape [1] or [1, 1]), so each file's data is a few
hundred KB at most and the headers are what is read: their names and layout are DeepSeek-V3's, their
shapes and offsets a few digits shorter than the real ones."""
import itertools, json, os, shutil, struct, sys

root, n, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
BYTES = {"BF16": 2, "F32": 4, "F8_E4M3": 1}


def deepseek_v3(layers=61):
    """DeepSeek-V3's tensor names and dtypes in its shards' order; past `layers`, more MoE layers."""
    yield "model.embed_tokens.weight", "BF16", 2
    for layer in itertools.count():
        if layer == layers + 1:
            yield "model.norm.weight", "BF16", 1
            yield "lm_head.weight", "BF16", 2
        p = f"model.layers.{layer}."

        def fp8(name):  # an FP8 weight and its block scales
            return [(p + name + ".weight", "F8_E4M3", 2), (p + name + ".weight_scale_inv", "F32", 2)]
        yield from [(p + "input_layernorm.weight", "BF16", 1), (p + "post_attention_layernorm.weight", "BF16", 1)]
        yield from fp8("self_attn.q_a_proj") + [(p + "self_attn.q_a_layernorm.weight", "BF16", 1)]
        yield from fp8("self_attn.q_b_proj") + fp8("self_attn.kv_a_proj_with_mqa")
        yield from [(p + "self_attn.kv_a_layernorm.weight", "BF16", 1)] + fp8("self_attn.kv_b_proj")
        yield from fp8("self_attn.o_proj")
        if layer < 3:  # first_k_dense_replace
            for m in ("gate_proj", "up_proj", "down_proj"):
                yield from fp8("mlp." + m)
            continue
        yield from [(p + "mlp.gate.weight", "BF16", 2), (p + "mlp.gate.e_score_correction_bias", "F32", 1)]
        for e in range(256):
            for m in ("gate_proj", "up_proj", "down_proj"):
                yield from fp8(f"mlp.experts.{e}.{m}")
        for m in ("gate_proj", "up_proj", "down_proj"):
            yield from fp8("mlp.shared_experts." + m)
        if layer == layers:  # the multi-token-prediction layer
            yield from [(p + "embed_tokens.weight", "BF16", 2), (p + "enorm.weight", "BF16", 1),
                        (p + "hnorm.weight", "BF16", 1), (p + "eh_proj.weight", "BF16", 2),
                        (p + "shared_head.norm.weight", "BF16", 1), (p + "shared_head.head.weight", "BF16", 2)]


def write_safetensors(path, tensors):
    header, at = {}, 0
    for name, dtype, rank in tensors:
        header[name] = {"dtype": dtype, "shape": [1] * rank, "data_offsets": [at, at + BYTES[dtype]]}
        at += BYTES[dtype]
    header["__metadata__"] = {"format": "pt"}
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)  # padded to 8 bytes, as the safetensors crate writes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + bytes(at))


def write_gguf(path, count):
    """GGUF v3 per ggml docs/gguf.md: a small Llama's metadata, then `count` F32 [8] tensors."""
    le = lambda fmt, *v: struct.pack("<" + fmt, *v)
    s = lambda text: le("Q", len(text.encode())) + text.encode()
    blocks = -(-count // 1000)  # tensor i is in block i // 1000; block_count must agree with the names
    kv = [("general.architecture", 8, s("llama")), ("llama.block_count", 4, le("I", blocks)),
          ("llama.embedding_length", 4, le("I", 256)), ("llama.feed_forward_length", 4, le("I", 512)),
          ("llama.attention.head_count", 4, le("I", 4)), ("llama.attention.head_count_kv", 4, le("I", 2)),
          ("llama.context_length", 4, le("I", 256)), ("llama.vocab_size", 4, le("I", 100))]
    out = [b"GGUF", le("I", 3), le("Q", count), le("Q", len(kv))]
    out += [s(key) + le("I", t) + v for key, t, v in kv]
    out += [s(f"blk.{i // 1000}.ffn_gate_exps.{i % 1000}.weight") + le("I", 1) + le("Q", 8) + le("I", 0) +
            le("Q", 32 * i) for i in range(count)]
    head = b"".join(out)
    head += bytes(-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head + bytes(32 * count))


for name, count in (("st1", n), ("st2", 2 * n)):
    os.makedirs(os.path.join(root, name))
    shutil.copy(config, os.path.join(root, name, "config.json"))
    write_safetensors(os.path.join(root, name, "model.safetensors"), itertools.islice(deepseek_v3(10**9), count))
write_gguf(os.path.join(root, "g1.gguf"), n)
write_gguf(os.path.join(root, "g2.gguf"), 2 * n)

v3 = os.path.join(root, "v3")
os.makedirs(v3)
shutil.copy(config, os.path.join(v3, "config.json"))
tensors = list(itertools.islice(deepseek_v3(), 91991))
assert tensors[-1][0] == "lm_head.weight", tensors[-1]
shards, weight_map = 163, {}
for s in range(shards):
    part = tensors[s * len(tensors) // shards:(s + 1) * len(tensors) // shards]
    file = f"model-{s + 1:05d}-of-{shards:06d}.safetensors"
    write_safetensors(os.path.join(v3, file), part)
    weight_map.update({name: file for name, _, _ in part})
total = sum(BYTES[d] for _, d, _ in tensors)
with open(os.path.join(v3, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
