// The command table. A new command is one row here and one file beside this one.
#include "cli/check_command.h"
#include "cli/command.h"
#include "cli/completion.h"
#include "cli/dtypes_command.h"
#include "cli/fit_command.h"
#include "cli/hardware_command.h"
#include "cli/measure_command.h"
#include "cli/models_command.h"
#include "cli/sweep_command.h"
#include "cli/time_command.h"

namespace tally {

namespace {

std::vector<std::string> Plus(std::vector<std::string> flags, const std::string& flag) {
  flags.push_back(flag);
  return flags;
}

}  // namespace

// `reads`: checked against what each command's report shows (docs/commands.md, "Commands"); flops counts one
// replica's step, so neither parallelism nor dtypes change it.
const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      MakeCommand("estimate", "everything tally knows about MODEL, in one report", Stage::kSettings, AddEstimateFlags,
                  RunEstimate,
                  {"estimate gpt2-small", "estimate llama-2-7b --batch 8 --seq 4096 --hardware h100-sxm",
                   "estimate llama-3-8b --format json"},
                  Plus(WorkloadFlagsRead({"--no-causal"}), "--layers")),
      MakeCommand("params", "parameters: total, embedding, per component", Stage::kSettings, AddParamsFlags, RunParams,
                  {"params gpt2-small", "params tests/data/hf/Meta-Llama-3-8B.json",
                   "params tests/data/weights/tiny-llama.gguf --get params.total"},
                  {"--layers"}),
      MakeCommand(
          "flops", "FLOPs: forward, backward, per token, 6·N·D", Stage::kSettings, AddFlopsFlags, RunFlops,
          {"flops gpt2-small --seq 1024", "flops llama-2-7b --batch 4 --causal --explain",
           "flops --gemm 2048x768x3072"},
          {"--batch", "--micro-batch", "--grad-accum", "--seq", "--target-seq", "--images", "--causal", "--recompute",
           "--recompute-layers", "--dropout", "--trainable", "--lora", "--lora-targets", "--input", "--layers"}),
      MakeCommand("memory", "training and inference memory per device, itemized", Stage::kSettings, AddMemoryFlags,
                  RunMemory,
                  {"memory llama-2-7b --hardware rtx-4090 --lora 16 --quant nf4",
                   "memory llama-2-7b --hardware a100-80gb --zero 3 --gpus 8",
                   "memory llama-3.1-8b --seq 8192 --precision amp-bf16 --timeline step.svg"},
                  Plus(Plus(WorkloadFlagsRead({"--causal", "--no-causal"}), "--layers"), "--timeline")),
      MakeCommand("fit", "largest batch or sequence, or fewest devices", Stage::kSettings, AddFitCommandFlags,
                  RunFitCommand,
                  {"fit llama-3-8b --hardware h100 --zero 3 --gpus 8 --recompute full",
                   "fit gpt2-xl --memory 24GiB --solve seq", "fit llama-2-13b --memory 80GiB --solve gpus --zero 3"},
                  WorkloadFlagsRead({"--causal", "--no-causal"})),
      MakeCommand(
          "check", "limits on report keys: exit 0 pass, 1 fail", Stage::kNone, AddCheckCommandFlags, RunCheckCommand,
          {"check gpt2-small --max params.total=150M", "check --budget configs/budgets/lora-24gb.yaml --format json",
           "check llama-3-8b --hardware h100-sxm --max time.train_seconds=1e6"},
          WorkloadFlagsRead()),
      MakeCommand("time", "training time; --mode infer: TTFT and TPOT", Stage::kSettings, AddTimeCommandFlags, RunTime,
                  {"time llama-2-7b --hardware h100-sxm --gpus 64 --tokens 2T",
                   "time llama-3-8b --hardware h100 --mode infer --prompt 4Ki --generate 256",
                   "time gpt2-small --hardware h100-sxm --achieved 400T --tokens 10B"},
                  Plus(WorkloadFlagsRead(), "--layers")),
      MakeCommand("hardware", "the hardware catalog: peaks, memory, bandwidth", Stage::kNone, AddHardwareFlags,
                  RunHardware, {"hardware", "hardware h100", "hardware mi300x --format json"}),
      MakeCommand("sweep", "a grid over comma lists, one row per point", Stage::kNone, AddSweepCommandFlags,
                  RunSweepCommand,
                  {"sweep llama-3.2-1b llama-3.2-3b llama-3.1-8b --seq 2Ki,8Ki",
                   "sweep gpt2-small --batch 1,2,4 --seq 512,1024", "sweep llama-2-7b --zero 0,1,2,3 --gpus 8"},
                  WorkloadFlagsRead()),
      MakeCommand("measure", "GEMM FLOP/s and MFU measured on this machine", Stage::kSettings, AddMeasureCommandFlags,
                  RunMeasure,
                  {"measure --sizes 512,1024", "measure --model gpt2-small --batch 1 --seq 128",
                   "measure --calibrate my-machine.yaml"},
                  {"--batch", "--seq", "--causal", "--trainable", "--lora"}),
      MakeCommand("models", "the presets, one line each", Stage::kNone, AddModelsFlags, RunModels,
                  {"models", "models llama", "models llama-3-8b --format json"}),
      MakeCommand("completion", "a bash or zsh completion script", Stage::kNone, AddCompletionFlags, RunCompletion,
                  {"completion bash", "completion zsh"}),
      MakeCommand("dtypes", "number formats: bits, range, epsilon; --value X", Stage::kNone, AddDtypesFlags, RunDtypes,
                  {"dtypes", "dtypes bf16", "dtypes --value 1e-8"}),
  };
  return kCommands;
}

}  // namespace tally
