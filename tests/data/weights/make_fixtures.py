#!/usr/bin/env python3
"""Writes the tiny weight fixtures beside this script (data all zeros; only the headers matter):
  tiny-llama/config.json + model.safetensors   a 1-block Llama, hidden 32, F16, tied head stored twice
  tiny-llama.gguf                              the same model as GGUF v3: Q8_0 matrices, F32 norms
  tiny-generic/config.json + model.safetensors the same weights under an unknown model_type, untied
                                               (read as a generic decoder; every tensor matches)
Run it again to regenerate them; the tests assert counts derived by hand in their comments."""
import json, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
H, F, V, L, HEADS, KV, HD = 32, 32, 8, 1, 2, 1, 16

# Hugging Face names and PyTorch shapes [out, in].
def hf_tensors():
    t = [("model.embed_tokens.weight", [V, H])]
    for i in range(L):
        p = f"model.layers.{i}."
        t += [(p + "input_layernorm.weight", [H]), (p + "self_attn.q_proj.weight", [HEADS * HD, H]),
              (p + "self_attn.k_proj.weight", [KV * HD, H]), (p + "self_attn.v_proj.weight", [KV * HD, H]),
              (p + "self_attn.o_proj.weight", [H, HEADS * HD]), (p + "post_attention_layernorm.weight", [H]),
              (p + "mlp.gate_proj.weight", [F, H]), (p + "mlp.up_proj.weight", [F, H]),
              (p + "mlp.down_proj.weight", [H, F])]
    return t + [("model.norm.weight", [H]), ("lm_head.weight", [V, H])]

def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n

def safetensors(path):
    header, at = {}, 0
    for name, shape in hf_tensors():
        n = numel(shape) * 2
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [at, at + n]}
        at += n
    js = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + b"\0" * at)

def config(path, generic=False):
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": H, "intermediate_size": F,
           "max_position_embeddings": 64, "model_type": "llama", "num_attention_heads": HEADS,
           "num_hidden_layers": L, "num_key_value_heads": KV, "tie_word_embeddings": True,
           "torch_dtype": "float16", "vocab_size": V}
    if generic:
        del cfg["architectures"]
        cfg.update(model_type="tinyllm", tie_word_embeddings=False)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")

def gguf(path):
    s = lambda x: struct.pack("<Q", len(x.encode())) + x.encode()
    kv = [s("general.architecture") + struct.pack("<I", 8) + s("llama"),
          s("general.name") + struct.pack("<I", 8) + s("tiny-llama")]
    for k, v in [("block_count", L), ("embedding_length", H), ("feed_forward_length", F),
                 ("attention.head_count", HEADS), ("attention.head_count_kv", KV), ("context_length", 64),
                 ("vocab_size", V)]:
        kv.append(s("llama." + k) + struct.pack("<II", 4, v))
    infos, at = [], 0
    def tensor(name, ne):
        nonlocal at
        q8 = len(ne) == 2  # Q8_0 (type 8): 34 bytes per 32; norms F32 (type 0)
        n = numel(ne) // 32 * 34 if q8 else numel(ne) * 4
        infos.append(s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) +
                     struct.pack("<IQ", 8 if q8 else 0, at))
        at += (n + 31) // 32 * 32
    tensor("token_embd.weight", [H, V])
    tensor("output_norm.weight", [H])
    for i in range(L):
        b = f"blk.{i}."
        for name, ne in [("attn_norm", [H]), ("attn_q", [H, HEADS * HD]), ("attn_k", [H, KV * HD]),
                         ("attn_v", [H, KV * HD]), ("attn_output", [HEADS * HD, H]), ("ffn_norm", [H]),
                         ("ffn_gate", [H, F]), ("ffn_up", [H, F]), ("ffn_down", [F, H])]:
            tensor(b + name + ".weight", ne)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kv)) + b"".join(kv) + b"".join(infos)
    head += b"\0" * ((32 - len(head) % 32) % 32)
    with open(path, "wb") as f:
        f.write(head + b"\0" * at)

os.makedirs(os.path.join(HERE, "tiny-llama"), exist_ok=True)
config(os.path.join(HERE, "tiny-llama", "config.json"))
safetensors(os.path.join(HERE, "tiny-llama", "model.safetensors"))
gguf(os.path.join(HERE, "tiny-llama.gguf"))
os.makedirs(os.path.join(HERE, "tiny-generic"), exist_ok=True)
config(os.path.join(HERE, "tiny-generic", "config.json"), generic=True)
safetensors(os.path.join(HERE, "tiny-generic", "model.safetensors"))
