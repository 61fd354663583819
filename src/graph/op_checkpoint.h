// torchtitan's per-op selective activation checkpointing, `--recompute op` (its activation_checkpoint
// mode "selective" with selective_ac_option "op": torchtitan/models/llama3/parallelize_llama.py at
// e7c0cae, _save_list and _get_custom_policy). Each transformer block is checkpointed with a policy
// that keeps the outputs of aten.mm except every second call (the 2nd, 4th, … in the block's call
// order), and those of SDPA's flash and memory-efficient kernels; every other op runs again in the
// backward, from the block's input.
#pragma once

#include "graph/layer_graph.h"

namespace tally {

// Marks each block node's Layer::op_rerun and Layer::op_kept. A linear makes one mm per module the
// checkpoint stores it as (Layer::module_widths: Llama's q_proj, k_proj and v_proj are three), a
// LoRA adapter two (A, then B); an MoE's routed experts run a grouped GEMM (torch._grouped_mm),
// which the list leaves to rerun. With `flash` attention the core keeps its output and log-sum-exp
// and does not rerun; eager attention's bmm and softmax are not on the list and rerun.
void MarkOpCheckpoint(LayerGraph& graph, bool flash);

}  // namespace tally
