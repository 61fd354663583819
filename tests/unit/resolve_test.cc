// The settings a run resolves once per model, and the fit against a named device.
#include "config/resolve.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "unit/run_tally.h"
#include "unit/test_util.h"
#include "util/units.h"

namespace tally {
namespace {

TEST_CASE("resolve: the default sequence is the pre-training context, capped at 8,192 with a note") {
  const Settings gpt2 = ResolveSettings({}, ResolveModel("gpt2-small"));
  CHECK(*gpt2.seq == 1024);
  CHECK(gpt2.notes.empty());
  // Mistral 7B's config allows 32,768 tokens.
  const Settings mistral = ResolveSettings({}, ResolveModel("mistral-7b"));
  CHECK(*mistral.seq == 8192);
  REQUIRE(mistral.notes.size() == 1);
  CHECK(mistral.notes[0] ==
        "--seq: defaulting to 8192 tokens; 'mistral-7b' takes up to 32768 (give --seq for a longer context)");
  // A context extended after pre-training (Llama 3.1: 131,072 from 8,192) defaults to the original.
  ModelSpec extended = ResolveModel("llama-3-8b");
  extended.transformer.context_length = 131072;
  extended.transformer.pretrain_context = 4096;
  CHECK(*ResolveSettings({}, extended).seq == 4096);
  // A given --seq stays; a sequential model has none.
  CHECK(*ResolveSettings({.seq = 100000}, ResolveModel("mistral-7b")).seq == 100000);
  CHECK(!ResolveSettings({}, ResolveModel("seed-mlp")).seq);
}

TEST_CASE("resolve: an encoder-decoder's target defaults to the source, within the decoder's learned positions") {
  // t5-small: relative position biases, no learned positions (n_positions 512 is not a limit).
  const ModelSpec t5 = LoadModelFile(testing::Hf("t5-small.json"));
  CHECK(DefaultTargetSeq(t5.transformer, 4096) == 4096);
  // bart-base: 1024 learned positions in each stack (max_position_embeddings).
  const ModelSpec bart = LoadModelFile(testing::Hf("bart-base.json"));
  CHECK(DefaultTargetSeq(bart.transformer, 512) == 512);
  CHECK(DefaultTargetSeq(bart.transformer, 1024) == 1024);
  // whisper-large-v3: 1500 source positions, but the decoder has max_target_positions 448.
  const ModelSpec whisper = LoadModelFile(testing::Hf("whisper-large-v3.json"));
  CHECK(DefaultTargetSeq(whisper.transformer, 1500) == 448);
  CHECK(DefaultTargetSeq(whisper.transformer, 100) == 100);
}

TEST_CASE("resolve: --hardware gives the usable memory and whether each ledger fits") {
  // h100-sxm: its 80 GiB (no --reserve); the runtime's memory is a line of each device figure.
  const testing::TallyRun run =
      testing::RunTally({"memory", "llama-2-7b", "--hardware", "h100-sxm", "--format", "json"});
  CHECK(run.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(run.out);
  CHECK(doc["memory"]["limit"] == 80ULL << 30);
  // Training, mixed-bf16 AdamW: 16 B per parameter alone is 107.8 GB, more than 80 GiB.
  CHECK(doc["memory"]["train"]["fits"] == false);
  CHECK(doc["memory"]["infer"]["fits"] == true);
  const uint64_t needed = doc["memory"]["train"]["device"].get<uint64_t>();
  CHECK(run.err.find("training needs " + FormatBytes(needed, UnitSystem::kIec) +
                     " per device; h100-sxm leaves 80.00 GiB: it does not fit") != std::string::npos);
  const testing::TallyRun reserve = testing::RunTally(
      {"memory", "llama-2-7b", "--hardware", "h100-sxm", "--reserve", "10GiB", "--get", "memory.limit"});
  CHECK(reserve.out == std::to_string(70ULL << 30) + "\n");
  // fit takes the device's usable memory when --memory is not given: the same answer as 80GiB.
  const testing::TallyRun device = testing::RunTally(
      {"fit", "llama-2-7b", "--hardware", "h100-sxm", "--zero", "3", "--gpus", "8", "--get", "fit.batch"});
  const testing::TallyRun explicit_limit =
      testing::RunTally({"fit", "llama-2-7b", "--memory", "80GiB", "--zero", "3", "--gpus", "8", "--get", "fit.batch"});
  CHECK(device.code == 0);
  CHECK(device.out == explicit_limit.out);
}

TEST_CASE("time: a decoder's kernels skip attention's masked half in the hardware FLOPs only") {
  // Llama-3-8B at 8,192 tokens: per token and layer, QK^T and AV take 2 · 2 · s · (a · d) =
  // 4 · 8192 · 4096 = 134,217,728 forward FLOPs; x 32 layers x 3 (forward and backward) =
  // 12,884,901,888, of which causal kernels skip half: 6,442,450,944 per token.
  const std::vector<std::string> args = {"time",       "llama-3-8b", "--hardware", "h100-sxm", "--tokens", "1T",
                                         "--achieved", "400T",       "--seq",      "8192",     "--format", "json"};
  const nlohmann::json causal = nlohmann::json::parse(testing::RunTally(args).out)["time"];
  std::vector<std::string> full_args = args;
  full_args.push_back("--no-causal");
  const nlohmann::json full = nlohmann::json::parse(testing::RunTally(full_args).out)["time"];
  CHECK(causal["compute_flops"] == full["compute_flops"]);  // model FLOPs: attention whole
  CHECK(full["hardware_flops"] == full["compute_flops"]);
  CHECK(full["compute_flops"].get<double>() - causal["hardware_flops"].get<double>() == 6'442'450'944.0 * 1e12);
  // A time from an achieved rate follows the hardware FLOPs: 1 device at 400 TFLOP/s.
  CHECK(causal["train_seconds"].get<double>() == doctest::Approx(causal["hardware_flops"].get<double>() / 400e12));
  CHECK(causal["train_seconds"].get<double>() < full["train_seconds"].get<double>());
}

TEST_CASE("time: an achieved rate alone, without a device, gives the training time") {
  // Llama-3-8B at 8,192 tokens: 51,470,401,536 hardware FLOPs per token under causal kernels (the
  // case above), so 1T tokens on 64 devices at 400 TFLOP/s take 5.1470401536e22 / (64 · 400e12) s.
  const testing::TallyRun r = testing::RunTally(
      {"time", "llama-3-8b", "--achieved", "400T", "--tokens", "1T", "--gpus", "64", "--format", "json"});
  REQUIRE(r.code == 0);
  const nlohmann::json t = nlohmann::json::parse(r.out)["time"];
  CHECK(t["train_seconds"].get<double>() == doctest::Approx(5.1470401536e22 / (64 * 400e12)));
  CHECK_FALSE(t.contains("mfu"));  // no peak to divide by
  CHECK_FALSE(t.contains("fits"));
  // Inference needs a device's bandwidth: still refused.
  CHECK(testing::RunTally({"time", "llama-3-8b", "--achieved", "400T", "--mode", "infer"}).code == 2);
}

TEST_CASE("time: a calibrated file is used only for the dtypes it measured") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-calibrated-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "name: my-cpu\nkind: cpu\nmemory_bytes: 25769803776\nmemory_bandwidth: 50e9\n"
                         "peak_flops: {fp32: 453e9, bf16: 906e9}\nachieved_flops: {fp32: 210e9}\n";
  // bf16 (mixed-bf16, the default) was not measured: refused, never the computed bf16 peak.
  const testing::TallyRun bf16 =
      testing::RunTally({"time", "gpt2-small", "--hardware", file.string(), "--tokens", "1B"});
  CHECK(bf16.code == 2);
  CHECK(bf16.err.find("measured fp32 but not bf16") != std::string::npos);
  // fp32 was: GPT-2 small at 1,024 tokens executes 854,438,400 − 56,623,104 (the masked half of QK^T
  // and AV: 12 layers · 2 · 2 · 1024 · 768 · 3 / 2) = 797,815,296 FLOPs per token; 1e9 tokens at 210e9.
  const testing::TallyRun fp32 = testing::RunTally({"time", "gpt2-small", "--hardware", file.string(), "--tokens", "1B",
                                                    "--precision", "fp32", "--get", "time.train_seconds"});
  CHECK(fp32.code == 0);
  CHECK(std::stod(fp32.out) == doctest::Approx(797'815'296.0 * 1e9 / 210e9));
  std::filesystem::remove(file);
}

TEST_CASE("model: a window that only some layers use says how many") {
  // Gemma 2 9B: 42 layers alternating sliding (4096) and full, from layer 0 (configuration_gemma2.py).
  const testing::TallyRun gemma = testing::RunTally({"params", "gemma-2-9b", "--get", "model.sliding_layers"});
  CHECK(gemma.out == "21\n");
  // Mistral 7B slides on every layer: no count, the window is the model's.
  CHECK(testing::RunRaw({"params", "mistral-7b", "--get", "model.sliding_layers"}).code == 2);
}

TEST_CASE("time: the modelled step says it leaves out expert-parallel all-to-all") {
  const testing::TallyRun r =
      testing::RunTally({"time", "mixtral-8x7b", "--hardware", "h100", "--gpus", "8", "--zero", "3", "--tokens", "1B"});
  CHECK(r.code == 0);
  CHECK(r.err.find("no expert-parallel all-to-all") != std::string::npos);
}

}  // namespace
}  // namespace tally
