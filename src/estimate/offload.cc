#include "estimate/offload.h"

#include <algorithm>

#include "estimate/memory.h"
#include "estimate/roofline.h"
#include "util/checked_math.h"

namespace tally {

void OffloadToHost(const ModelStates& states, const Settings& s, TrainMemory& m) {
  if (s.offload == Offload::kNone) return;
  m.host_gradients = m.gradients;
  m.host_master = m.master_weights;
  m.host_optimizer = m.optimizer;
  m.gradients = m.master_weights = m.optimizer = 0;
  if (s.offload == Offload::kParams) {
    m.host_weights = m.weights;
    const uint64_t gathered = CheckedAdd(
        states.outside_blocks, CheckedMul(2, states.largest_block, "the gathered weights"), "the gathered weights");
    m.weights = std::min(states.weights, gathered);
  }
  m.host = CheckedAdd(CheckedAdd(m.host_weights, m.host_gradients, "host memory"),
                      CheckedAdd(m.host_master, m.host_optimizer, "host memory"), "host memory");
}

OffloadTraffic OffloadBytes(const TrainMemory& m, const Settings& s, uint64_t n_layers) {
  OffloadTraffic t;
  if (s.offload == Offload::kNone) return t;
  const double gradients = static_cast<double>(m.host_gradients);
  t.down_per_micro = gradients;
  if (s.offload == Offload::kParams) {
    // The forward and the backward each gather the weights (and each recomputed block's forward again).
    const double passes = 2 + RecomputedShare(s.recompute, s.recompute_layers, n_layers, s.pp);
    t.up_per_micro = passes * static_cast<double>(m.host_weights);
  } else {
    // The CPU's updated weights, cast to the weight dtype, go back once: as many elements as the
    // gradient partition (LoRA's fp32 adapters: in theirs, AdapterDtypes).
    const Precisions d = AdapterDtypes(s).value_or(s.dtypes);
    t.up_per_step = gradients / BytesPerElement(d.grad) * BytesPerElement(d.param);
  }
  return t;
}

}  // namespace tally
