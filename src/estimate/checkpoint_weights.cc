#include "estimate/checkpoint_weights.h"

#include "estimate/checkpoint_match.h"
#include "util/checked_math.h"

namespace tally {
namespace {

void AddGraph(CheckpointRates& rates, Component c, int block_type, uint64_t elements,
              const std::vector<BlockRun>& runs) {
  if (c == Component::kLora) return;  // adapters are not in a base checkpoint
  const TensorRole role = GraphRole(c, block_type >= 0);
  if (role == TensorRole::kNone) return;
  const uint64_t copies = block_type < 0 ? 1 : BlocksOfType(runs, block_type);
  uint64_t& n = rates.roles[role].graph_elements;
  n = CheckedAdd(n, CheckedMul(elements, copies, "the graph's elements"), "the graph's elements");
}

void AddStored(CheckpointRates& rates, const CheckpointInfo& c, uint64_t n_layers) {
  for (const CheckpointTensor& t : c.tensors) {
    int64_t block = -1;
    const TensorRole role = StoredRole(t.name, block);
    if (role == TensorRole::kNone || (block >= 0 && static_cast<uint64_t>(block) >= n_layers)) continue;
    uint64_t& b = rates.roles[role].stored_bytes;
    b = CheckedAdd(b, t.bytes, "the checkpoint's bytes");
  }
}

}  // namespace

std::optional<uint64_t> CheckpointRates::Bytes(TensorRole role, uint64_t elements) const {
  const auto it = roles.find(role);
  if (it == roles.end() || it->second.stored_bytes == 0 || it->second.graph_elements == 0) return std::nullopt;
  const u128 scaled = static_cast<u128>(elements) * it->second.stored_bytes;
  const u128 bytes = (scaled + it->second.graph_elements - 1) / it->second.graph_elements;
  if (bytes > UINT64_MAX) return CheckedMul(elements, it->second.stored_bytes, "a tensor's bytes");  // throws
  return static_cast<uint64_t>(bytes);
}

std::optional<double> CheckpointRates::PerElement(TensorRole role) const {
  const auto it = roles.find(role);
  if (it == roles.end() || it->second.stored_bytes == 0 || it->second.graph_elements == 0) return std::nullopt;
  return static_cast<double>(it->second.stored_bytes) / static_cast<double>(it->second.graph_elements);
}

const char* CheckpointRates::Coverage() const {
  bool some = false, all = true;
  for (const auto& [role, r] : roles) {
    if (r.graph_elements == 0) continue;
    if (r.stored_bytes > 0) {
      some = true;
    } else {
      all = false;
    }
  }
  return !some ? "rules" : all ? "checkpoint" : "checkpoint and rules";
}

bool UsesCheckpointWeights(const ModelSpec& spec, const Settings& s) {
  return spec.checkpoint && s.quant == Quant::kNone && !s.param_dtype_given;
}

CheckpointRates CheckpointRatesOf(const CheckpointInfo& c, const MemoryModel& m) {
  CheckpointRates rates;
  for (const ParamEntry& t : m.params) {
    if (!t.tied_copy) AddGraph(rates, t.component, t.block_type, t.elements, m.runs);
  }
  AddStored(rates, c, m.n_layers);
  return rates;
}

CheckpointRates CheckpointRatesOf(const CheckpointInfo& c, const LayerGraph& g) {
  CheckpointRates rates;
  for (const Layer& l : g.layers) {
    for (const ParamTensor& t : l.param_tensors) {
      uint64_t n = 1;
      for (uint64_t d : t.shape) n = CheckedMul(n, d, "a parameter tensor");
      AddGraph(rates, l.component, l.block_type, n, g.runs);
    }
  }
  AddStored(rates, c, g.n_layers);
  return rates;
}

}  // namespace tally
