// The workload flags' table (cli/settings_flags.h): TextFlag::graph marks exactly the flags whose
// value reaches a graph's summary (GraphSettings at batch 1), which a sweep sizes its cache by.
#include "cli/settings_flags.h"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <utility>

#include "graph/build_graph.h"

namespace tally {
namespace {

// Two values of each flag, and the flags each needs beside it to be read at all.
struct Sample {
  std::string a, b;
  std::map<std::string, std::string> with;
};

const std::map<std::string, Sample>& Samples() {
  static const std::map<std::string, Sample> kSamples = {
      {"batch", {"2", "4"}},
      {"micro_batch", {"1", "2"}},
      {"grad_accum", {"1", "2"}},
      {"seq", {"128", "256"}},
      {"target_seq", {"16", "32"}},
      {"images", {"0", "1"}},
      {"mode", {"train", "infer"}},
      {"precision", {"fp32", "bf16"}},
      {"param_dtype", {"fp32", "bf16"}},
      {"grad_dtype", {"fp32", "bf16"}},
      {"state_dtype", {"fp32", "bf16"}},
      {"optimizer", {"sgd", "adamw"}},
      {"recompute", {"none", "full"}},
      {"recompute_layers", {"1", "2", {{"recompute", "full"}}}},
      {"attention", {"eager", "flash"}},
      {"dropout", {"0", "0.1"}},
      {"lora", {"4", "8"}},
      {"lora_targets", {"qkv", "out", {{"lora", "8"}}}},
      {"lora_dtype", {"fp32", "base", {{"lora", "8"}, {"precision", "bf16"}}}},
      {"gpus", {"2", "4"}},
      {"tp", {"1", "2"}},
      {"pp", {"1", "2"}},
      {"cp", {"1", "2"}},
      {"ep", {"1", "2"}},
      {"etp", {"1", "2"}},
      {"zero", {"0", "1"}},
      {"kv_dtype", {"fp16", "bf16"}},
      {"quant", {"none", "int8"}},
      {"overhead", {"1GiB", "10%"}},
      {"hardware", {"h100", "a100-80gb"}},
      {"reserve", {"1GiB", "2GiB"}},
      {"dropout_mask", {"cuda", "cpu"}},
      {"input", {"3,32,32", "3,64,64"}},
      {"mlp_kernel", {"eager", "fused"}},
      {"optimizer_impl", {"foreach", "fused"}},
      {"loss_kernel", {"eager", "chunked"}},
      {"cuda_context", {"1GiB", "2GiB"}},
      {"cublas_workspace", {"32MiB", "64MiB"}},
      {"nccl_buffers", {"256MiB", "512MiB"}},
      {"fragmentation", {"10%", "20%"}},
      {"max_batched_tokens", {"512", "1024"}},
      {"kv_block", {"16", "32"}},
      {"gpu_memory_utilization", {"0.9", "0.8"}},
      {"offload", {"none", "optimizer", {{"zero", "2"}}}},
      {"dequant_kernel", {"marlin", "tinygemm"}},
  };
  return kSamples;
}

GraphSettings GraphOf(const TextFlag& flag, const std::string& value, const Sample& sample) {
  WorkloadFlags flags;
  for (const TextFlag& other : TextFlags()) {
    if (auto it = sample.with.find(other.name); it != sample.with.end()) flags.*other.field = it->second;
  }
  flags.*flag.field = value;
  GraphSettings g = GraphSettingsOf(ReadSettings(flags));
  g.batch = 1;  // as Evaluation keeps its summaries: they scale with the batch
  return g;
}

TEST_CASE("settings flags: exactly the flags marked graph change the graph's settings") {
  for (const TextFlag& flag : TextFlags()) {
    CAPTURE(flag.name);
    const auto sample = Samples().find(flag.name);
    REQUIRE(sample != Samples().end());  // a new flag: give it two values above
    const Sample& s = sample->second;
    CHECK((GraphOf(flag, s.a, s) != GraphOf(flag, s.b, s)) == flag.graph);
  }
  CHECK(Samples().size() == TextFlags().size());
}

}  // namespace
}  // namespace tally
