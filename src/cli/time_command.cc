#include "cli/time_command.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cmath>

#include "cli/settings_flags.h"
#include "config/load_config.h"
#include "config/names.h"
#include "config/resolve.h"
#include "estimate/defaults.h"
#include "sections/estimate_report.h"
#include "sections/sections.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/units.h"

namespace tally {
namespace {

// Below 1e-6 a utilization is no longer a rate but an overflow: times past any double.
constexpr RealRange kUtilization = {.lo = 1e-6, .hi = 1, .what = "a ratio in [1e-6, 1], such as 0.4"};

}  // namespace

void AddTimeFlags(CLI::App* cmd, TimeFlags& f) {
  auto opt = [&](const char* name, std::optional<std::string>& into, const std::string& help, const char* type) {
    AddTextOption(cmd, name, into, help, type, "Time");
  };
  opt("--tokens", f.tokens, "training tokens, e.g. 2T or 300B (default: solve, or Chinchilla's 20 per parameter)", "N");
  opt("--days", f.days, "wall-clock budget in days (or 36h, 2w)", "D");
  opt("--hours", f.hours, "wall-clock budget in hours", "H");
  opt("--mfu", f.mfu,
      "training: end-to-end model FLOPs utilization of the dense peak; inference: each op's compute "
      "efficiency inside the roofline (default: where the catalog gives the device's GEMM efficiency, "
      "the step from its parts and each GEMM at its shape's share of it; else " +
          FormatDouble(kDefaultMfu) + ")",
      "RATIO");
  opt("--achieved", f.achieved, "hardware FLOP/s per device actually reached (instead of --mfu), e.g. 140e12",
      "FLOP/S");
  opt("--mbu", f.mbu,
      "memory-bandwidth utilization for the inference roofline (default " + FormatDouble(kDefaultMbu) + ")", "RATIO");
  opt("--prompt", f.prompt,
      "inference: prompt tokens per sequence (default 512, an encoder-decoder's decoder 1; 4Ki = 4,096)", "N");
  opt("--generate", f.generate, "inference: generated tokens per sequence (default 128)", "N");
  opt("--gpus-per-node", f.gpus_per_node,
      "training: devices per node; collectives take NCCL's model (a latency per call and ring step, the "
      "bytes over the link): within one node the intra-node link at NCCL's rate (its all-reduces by NVLS "
      "where the device has it), larger ones the inter-node link (default the device's scale-up domain: a "
      "GB200's NVL72 rack 72, else 8)",
      "N");
  opt("--vp", f.vp, "training: virtual pipeline stages per device (interleaved 1F1B; default 1)", "N");
  opt("--pp-schedule", f.pp_schedule,
      "training: the pipeline schedule, " + JoinNames<PipelineSchedule>(" | ") +
          " (default 1f1b, interleaved with --vp above 1); zero-bubble is ZB-H1, dualpipe DeepSeek-V3's",
      "NAME");
  opt("--kernels", f.kernels,
      "training: the step's non-GEMM ops, eager (PyTorch op by op, as Hugging Face scripts run; default) | "
      "fused (Megatron-LM, NeMo, TransformerEngine, torch.compile)",
      "KIND");
  cmd->add_flag("--tp-overlap", f.tp_overlap,
                "training: tensor-parallel collectives overlap the linears' GEMMs, run in Transformer Engine's chunks "
                "(Megatron-LM's --tp-comm-overlap); default exposed whole")
      ->group("Time");
  cmd->add_flag("--no-dp-overlap", f.no_dp_overlap,
                "training: data-parallel gradient reductions and ZeRO-3 gathers wait for the backward and forward "
                "(Megatron-LM without --overlap-grad-reduce); default overlapped, as PyTorch DDP and FSDP run them")
      ->group("Time");
  cmd->add_flag("--no-power-limit", f.no_power_limit,
                "training and prefill: GEMMs at their burst rates, as GEMM sweeps time them; default: on the H100 SXM, "
                "H200 and H800 (measured at 700 W) they slow as the board's power limit lowers the clock, the more the "
                "larger their share of the time")
      ->group("Time");
  cmd->add_flag("--ep-overlap", f.ep_overlap,
                "training: one micro-batch's MoE all-to-alls run under another's compute, forward beside backward "
                "(Megatron-Core's --overlap-moe-expert-parallel-comm, DeepSeek-V3's DualPipe); default exposed whole")
      ->group("Time");
  opt("--ep-dispatch", f.ep_dispatch,
      "training: the MoE token dispatcher, " + JoinNames<EpDispatch>(" | ") +
          " (default all-to-all, NCCL's); deepep sends a token across nodes once per node it reaches",
      "NAME");
  opt("--dp-bucket", f.dp_bucket,
      "training: the data-parallel buckets, " + JoinNames<DpBucket>(" | ") +
          " | parameters (default ddp, PyTorch DDP's 25 MiB of gradients); megatron: Megatron-Core's max(40M, "
          "1M x dp) parameters, deepspeed: 5e8, 128Mi: Megatron-Bridge's",
      "SIZE");
  cmd->add_flag("--overlap-param-gather", f.overlap_param_gather,
                "training with --zero 1 or 2: the updated weights' all-gather runs under the next step's first "
                "forward (Megatron-LM's flag; Megatron-Bridge's wherever dp > 1); default after the update, "
                "exposed, as DeepSpeed runs it")
      ->group("Time");
  opt("--moe-imbalance", f.moe_imbalance,
      "training with --ep: the routed tokens the busiest expert-parallel rank receives over the mean (max / "
      "mean load, at least 1; default 1, balanced routing); every MoE layer waits for that rank",
      "RATIO");
  opt("--fp8-recipe", f.fp8_recipe,
      "training with --precision fp8: how tensors are scaled, " + JoinNames<Fp8Recipe>(" | ") +
          " (default tensorwise, Transformer Engine's current scaling); sets what the casts cost",
      "NAME");
  opt("--price", f.price, "training: price per device-hour, for time.cost", "PRICE");
}

TimeRequest ReadTimeRequest(const TimeFlags& f, bool gpus_given, uint64_t gpus) {
  TimeRequest r;
  if (f.tokens)
    r.train.tokens =
        ParseReal(*f.tokens, "--tokens", {.lo = 1, .what = "at least 1 token, such as 2T, 300B or 1.5e12", .si = true});
  if (f.days && f.hours) throw InputError("--days: give --days or --hours, not both");
  if (f.days) r.train.seconds = ParseDuration(*f.days, "--days", 'd');
  if (f.hours) r.train.seconds = ParseDuration(*f.hours, "--hours", 'h');
  if (gpus_given) r.train.gpus = gpus;
  if (r.train.tokens && r.train.seconds && r.train.gpus) {
    throw InputError("--tokens: give two of --tokens, --days/--hours and --gpus; tally solves for the third");
  }
  if (f.mfu && f.achieved) throw InputError("--achieved: give --mfu or --achieved, not both");
  if (f.mfu) r.train.mfu = ParseReal(*f.mfu, "--mfu", kUtilization);
  if (f.achieved) {
    r.train.achieved =
        ParseReal(*f.achieved, "--achieved", {.lo = 1, .what = "at least 1 FLOP/s, such as 400T", .si = true});
  }
  if (f.mbu) r.mbu = ParseReal(*f.mbu, "--mbu", kUtilization);
  if (f.prompt) r.prompt = ParseLength(*f.prompt, "--prompt");
  if (f.generate) r.generate = ParseLength(*f.generate, "--generate");
  if (f.gpus_per_node) r.train.gpus_per_node = ParseCount(*f.gpus_per_node, "--gpus-per-node");
  if (f.vp) r.train.vp = ParseCount(*f.vp, "--vp");
  if (f.kernels) r.train.kernels = ParseName<Kernels>(*f.kernels, "--kernels");
  r.train.tp_overlap = f.tp_overlap;
  r.train.dp_overlap = !f.no_dp_overlap;
  r.train.power_limit = !f.no_power_limit;
  r.train.ep_overlap = f.ep_overlap;
  if (f.ep_dispatch) r.train.ep_dispatch = ParseName<EpDispatch>(*f.ep_dispatch, "--ep-dispatch");
  if (f.dp_bucket) {
    const bool named = !f.dp_bucket->empty() && std::isalpha(static_cast<unsigned char>(f.dp_bucket->front())) != 0;
    if (named) {
      if (!FindName<DpBucket>(*f.dp_bucket)) {
        throw InputError("--dp-bucket: unknown value '" + *f.dp_bucket + "'; use " + JoinNames<DpBucket>(", ") +
                         " or a parameter count such as 128Mi");
      }
      r.train.dp_bucket = ParseName<DpBucket>(*f.dp_bucket, "--dp-bucket");
    } else {
      r.train.dp_bucket = DpBucket::kParams;
      try {
        r.train.dp_bucket_params = ParseCount(*f.dp_bucket, "--dp-bucket");
      } catch (const InputError& e) {
        throw InputError(e.message() + ": the parameters a bucket holds, or " + JoinNames<DpBucket>(", "));
      }
    }
  }
  r.train.param_gather_overlap = f.overlap_param_gather;
  if (f.fp8_recipe) r.train.fp8_recipe = ParseName<Fp8Recipe>(*f.fp8_recipe, "--fp8-recipe");
  if (f.moe_imbalance) {
    r.train.moe_imbalance =
        ParseReal(*f.moe_imbalance, "--moe-imbalance", {.lo = 1, .what = "a ratio of at least 1 such as 1.3"});
  }
  r.train.schedule = r.train.vp > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1f1b;
  if (f.pp_schedule) {
    r.train.schedule = ParseName<PipelineSchedule>(*f.pp_schedule, "--pp-schedule");
    const bool interleaved = r.train.schedule == PipelineSchedule::kInterleaved;
    if (interleaved != (r.train.vp > 1)) {
      throw InputError(interleaved ? "--pp-schedule: interleaved needs --vp 2 or more (virtual stages per device)"
                                   : "--vp: virtual stages are the interleaved schedule's; drop --pp-schedule " +
                                         *f.pp_schedule + " or --vp");
    }
  }
  if (f.price) r.train.price = ParseReal(*f.price, "--price", {.lo = 0, .what = "a price >= 0 such as 2.5"});
  return r;
}

void AddTimeCommandFlags(CLI::App* cmd, TimeCommandFlags& f) {
  AddModelFlags(cmd, f.model, true);
  AddTimeFlags(cmd, f.time);
}

SharedFlags SharedOf(const TimeCommandFlags& flags) { return SharedOf(flags.model); }

std::optional<Report> RunTime(const TimeCommandFlags& f, Prepared& prepared, RunContext& /*context*/) {
  Settings& settings = prepared.settings;
  // Without --mode infer, time is training time: say so, for what is modelled in training only (--cp).
  if (settings.cp > 1 && settings.mode == Mode::kBoth) settings.mode = Mode::kTrain;
  if (settings.mode != Mode::kInfer && (f.time.prompt || f.time.generate)) {
    throw InputError(std::string(f.time.prompt ? "--prompt" : "--generate") +
                     ": training time does not use it; add --mode infer for TTFT and TPOT");
  }
  TimeRequest request = ReadTimeRequest(f.time, f.model.workload.gpus.has_value(), settings.gpus);
  for (const auto& [flag, text] : {std::pair{"--prompt", &f.time.prompt}, std::pair{"--generate", &f.time.generate}}) {
    if (*text) {
      if (std::optional<std::string> note = LengthSuffixNote(**text, flag)) settings.notes.push_back(*note);
    }
  }
  if (f.model.layers && settings.mode != Mode::kInfer) {
    throw InputError("--layers: time gives the roofline per node for inference; add --mode infer");
  }
  request.layers = f.model.layers;
  Report report =
      EstimateReport(*prepared.evaluation, settings,
                     // Inference echoes its own workload (prompt, generated tokens), not the model's context.
                     {.settings = settings.mode != Mode::kInfer, .params = false, .flops = false});
  AddTime(*prepared.evaluation, settings, request, report);
  return report;
}

}  // namespace tally
