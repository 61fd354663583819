// `tally flops`: the FLOPs of one step under the workload, or of one GEMM (--gemm MxNxK).
#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "measure/gemm_shape.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace tally {
namespace {

// One GEMM: (m x k)·(k x n). Forward 2·m·n·k (estimate/flops.cc's convention); backward computes
// dX = dY·Wᵀ (m x n by n x k) and dW = Xᵀ·dY (k x m by m x n), 2·m·n·k each.
Report GemmReport(const std::string& text) {
  const GemmShape g = ParseGemmShape(text, "gemm");
  const uint64_t forward = g.Flops();
  const uint64_t backward = CheckedMul(uint64_t{2}, forward, "--gemm: the backward FLOPs");
  const std::string dims = std::to_string(g.m) + " · " + std::to_string(g.n) + " · " + std::to_string(g.k);
  Report r;
  r.Group("flops", "FLOPs");
  r.Set("flops.gemm", "GEMM (m x n x k)", g.Text(), Unit::kText);
  r.Set("flops.forward", "forward", forward, Unit::kFlop,
        "2 · m · n · k = 2 · " + dims + " (one multiply and one add per multiply-accumulate)");
  r.Set("flops.backward", "backward (dX and dW)", backward, Unit::kFlop,
        "dX = dY·Wᵀ and dW = Xᵀ·dY, 2 · m · n · k each = 2 x forward");
  r.Set("flops.step", "step (forward + backward)", CheckedAdd(forward, backward, "--gemm: the step FLOPs"), Unit::kFlop,
        "3 x forward");
  return r;
}

// A workload flag given with --gemm, which reads none: "--batch", or "".
std::string GivenWorkloadFlag(const WorkloadFlags& w) {
  for (const TextFlag& t : TextFlags()) {
    if (!(w.*t.field)) continue;
    std::string flag = std::string("--") + t.name;
    for (char& c : flag) c = c == '_' ? '-' : c;
    return flag;
  }
  if (w.causal) return "--causal";
  if (w.no_causal) return "--no-causal";
  if (w.sp) return "--sp";
  if (!w.trainable.empty()) return "--trainable";
  return "";
}

}  // namespace

void AddFlopsFlags(CLI::App* cmd, FlopsFlags& flags) {
  AddModelFlags(cmd, flags.model, true);
  cmd->get_option("MODEL")->required(false);  // --gemm needs none
  cmd->add_option("--gemm", flags.gemm, "count one GEMM (m x k)·(k x n) instead of a model, e.g. 2048x768x3072")
      ->type_name("MxNxK");
}

SharedFlags SharedOf(const FlopsFlags& flags) {
  SharedFlags shared = SharedOf(flags.model);
  if (flags.gemm) shared.model = nullptr;  // one GEMM: no model to read
  return shared;
}

std::optional<Report> RunFlops(const FlopsFlags& flags, Prepared& prepared, RunContext& /*context*/) {
  if (!flags.gemm) {
    if (!prepared.evaluation) throw InputError("MODEL is required; run 'tally flops --help' for usage");
    return ModelReport(prepared, {.params = false}, flags.model.layers);
  }
  if (!flags.model.model.empty()) throw InputError("--gemm: give MODEL or --gemm, not both");
  const std::string given = flags.model.layers ? "--layers" : GivenWorkloadFlag(flags.model.workload);
  if (!given.empty()) throw InputError(given + ": --gemm counts one GEMM; it reads no workload flag");
  return GemmReport(*flags.gemm);
}

}  // namespace tally
