// The workload flags shared by estimate, flops, memory and fit: their CLI11 wiring and their
// translation into validated Settings (errors name the flag).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_fwd.h"
#include "config/hardware.h"
#include "config/settings.h"

namespace tally {

// Raw flag text, parsed after CLI11 so that every error is tally's own one-liner.
struct WorkloadFlags {
  std::optional<std::string> batch, micro_batch, grad_accum, seq, target_seq, images;
  std::optional<std::string> mode, precision, param_dtype, grad_dtype, state_dtype, optimizer;
  std::optional<std::string> recompute, recompute_layers, attention, dropout, lora, lora_targets, lora_dtype;
  std::optional<std::string> dropout_mask, input, mlp_kernel, optimizer_impl, loss_kernel;
  std::optional<std::string> cuda_context, cublas_workspace, nccl_buffers, fragmentation;
  std::optional<std::string> gpus, tp, pp, cp, ep, etp, zero, kv_dtype, quant, overhead, hardware, reserve;
  std::optional<std::string> max_batched_tokens, kv_block, gpu_memory_utilization, offload;
  std::optional<std::string> dequant_kernel;
  std::vector<std::string> trainable;
  bool causal = false;
  bool no_causal = false;
  bool sp = false;
};

void AddWorkloadFlags(CLI::App* cmd, WorkloadFlags& flags);

// An option whose text tally parses itself (so that every error is its own one-liner), in `group`
// of the help.
void AddTextOption(CLI::App* cmd, const char* name, std::optional<std::string>& into, const std::string& help,
                   const char* type, const char* group);

// The flags that take one text value, by name with underscores for dashes (batch, micro_batch,
// kv_dtype, ...): budget files name settings this way, and sweep columns are settings.<name>.
struct TextFlag {
  const char* name;
  std::optional<std::string> WorkloadFlags::*field;
  // The flag reaches GraphSettings (graph/build_graph.h) other than the batch, which graph summaries
  // scale with: each value is its own summary. A sweep sizes its cache of summaries by these; its
  // results never depend on them (settings_flags_test checks the marks).
  bool graph = false;
};
const std::vector<TextFlag>& TextFlags();

// The dtypes a dtype flag accepts: --param-dtype and --grad-dtype floats, --state-dtype also int8,
// --kv-dtype also int8 and int4.
const std::vector<DType>& FlagDtypes(std::string_view flag);

// Settings with the defaults of docs/memory.md and the flags applied; batch, micro-batch,
// gradient accumulation and devices are made consistent (batch = micro_batch · grad_accum · dp).
// How --hardware's value becomes a device: ReadDevice reads the catalog entry or the file.
using DeviceReader = std::function<std::shared_ptr<const HardwareSpec>(const std::string& name)>;
std::shared_ptr<const HardwareSpec> ReadDevice(const std::string& name);
Settings ReadSettings(const WorkloadFlags& flags, const DeviceReader& read_device = ReadDevice);

}  // namespace tally
