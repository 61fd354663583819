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

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      MakeCommand("estimate", "everything tally knows about MODEL, in one report", AddEstimateFlags, RunEstimate,
                  {"estimate gpt2-small", "estimate llama-2-7b --batch 8 --seq 4096 --hardware h100-sxm",
                   "estimate llama-3-8b --format json"}),
      MakeCommand("params", "parameters: total, embedding, non-embedding, per component and block", AddParamsFlags,
                  RunParams, {"params gpt2-small", "params llama-2-7b --layers", "params gpt2-xl --get params.total"}),
      MakeCommand("flops", "FLOPs: forward, backward, step, per token, per component, 6·N·D", AddFlopsFlags, RunFlops,
                  {"flops gpt2-small --seq 1024", "flops llama-2-7b --batch 4 --causal --explain",
                   "flops gpt2-small --get flops.forward"}),
      MakeCommand("memory", "training and inference memory per device, itemized", AddMemoryFlags, RunMemory,
                  {"memory llama-2-7b --batch 4 --seq 2048", "memory llama-2-7b --hardware a100-80gb --zero 3 --gpus 8",
                   "memory llama-3-8b --mode infer --batch 16 --kv-dtype fp8"}),
      MakeCommand("fit", "largest batch or sequence, or fewest devices, within a memory limit", AddFitCommandFlags,
                  RunFitCommand,
                  {"fit llama-2-7b --hardware h100-sxm --seq 4096", "fit gpt2-xl --memory 24GiB --solve seq",
                   "fit llama-2-13b --memory 80GiB --solve gpus --zero 3"}),
      MakeCommand("check", "budget limits on any report key: exit 0 pass, 1 fail, 2 bad input", AddCheckCommandFlags,
                  RunCheckCommand,
                  {"check gpt2-small --max params.total=150M", "check --budget configs/budgets/example.yaml",
                   "check llama-3-8b --hardware h100-sxm --max time.train_seconds=1e6"}),
      MakeCommand("time", "training time or compute budget; --mode infer: TTFT and TPOT by roofline",
                  AddTimeCommandFlags, RunTime,
                  {"time llama-2-7b --hardware h100-sxm --gpus 64 --tokens 2T",
                   "time llama-3-8b --hardware h100-sxm --mode infer --prompt 4k --generate 256",
                   "time gpt2-small --achieved 400T --tokens 10B"}),
      MakeCommand("hardware", "the hardware catalog: dense peaks, memory, bandwidth", AddHardwareFlags, RunHardware,
                  {"hardware", "hardware --format json"}),
      MakeCommand("sweep", "a grid over comma-listed flags (--batch 1,2,4 --seq 1024,2048): one row per point",
                  AddSweepCommandFlags, RunSweepCommand,
                  {"sweep gpt2-small --batch 1,2,4 --seq 512,1024", "sweep llama-2-7b --zero 0,1,2,3 --gpus 8"}),
      MakeCommand("measure", "GEMM FLOP/s and MFU on this CPU (OpenBLAS) or GPU (cuBLAS); --model times a model's GEMMs",
                  AddMeasureCommandFlags, RunMeasure,
                  {"measure --sizes 512,1024", "measure --model gpt2-small --batch 1 --seq 128",
                   "measure --calibrate my-machine.yaml"}),
      MakeCommand("models", "the presets, one line each", AddModelsFlags, RunModels,
                  {"models", "models --format json"}),
      MakeCommand("completion", "a bash or zsh completion script: eval \"$(tally completion bash)\"",
                  AddCompletionFlags, RunCompletion, {"completion bash", "completion zsh"}),
      MakeCommand("dtypes", "bit layouts, ranges and epsilon of fp32 ... int4; --value X rounds X", AddDtypesFlags,
                  RunDtypes, {"dtypes", "dtypes --value 1e-8"}),
  };
  return kCommands;
}

}  // namespace tally
