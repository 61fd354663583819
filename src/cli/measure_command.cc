#include "cli/measure_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>

#include "cli/output_file.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/evaluation.h"
#include "measure/measure.h"
#include "report/format.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/spellcheck.h"
#include "util/units.h"

namespace tally {
namespace {

constexpr RealRange kPeakForms = {
    .lo = 0, .lo_open = true, .what = "a rate in FLOP/s such as 100T or 1.5e12", .si = true};
constexpr std::string_view kBudgetForms = "a time in seconds such as 0.2 or 2s (at most 3600)";

// --peak VALUE applies to every dtype; --peak fp32=V,bf16=W to those named.
std::map<GemmDType, double> Peaks(const std::string& text) {
  std::map<GemmDType, double> peaks;
  for (const std::string& item : SplitList(text, "--peak")) {
    const size_t eq = item.find('=');
    const double value = ParseReal(eq == std::string::npos ? item : item.substr(eq + 1), "--peak", kPeakForms);
    if (eq == std::string::npos) {
      for (GemmDType d : {GemmDType::kFp32, GemmDType::kFp64, GemmDType::kBf16, GemmDType::kFp16, GemmDType::kTf32,
                          GemmDType::kFp8}) {
        peaks[d] = value;
      }
    } else {
      peaks[ParseGemmDType(item.substr(0, eq), "--peak")] = value;
    }
  }
  return peaks;
}

void ReadShapes(const MeasureFlags& f, MeasureRequest& r) {
  if (f.sizes) {
    for (const std::string& s : SplitList(*f.sizes, "--sizes")) {
      const uint64_t n = ParseCount(s, "--sizes");
      r.shapes.push_back({n, n, n});
      if (std::count(r.shapes.begin(), r.shapes.end(), r.shapes.back()) > 1) r.shapes.pop_back();  // once each
    }
  }
  if (f.shapes) {
    for (const std::string& s : SplitList(*f.shapes, "--shapes")) {
      r.shapes.push_back(ParseGemmShape(s, "shapes"));
      if (std::count(r.shapes.begin(), r.shapes.end(), r.shapes.back()) > 1) r.shapes.pop_back();
    }
  }
}

void ReadLists(const MeasureFlags& f, MeasureRequest& r) {
  static const std::vector<std::string> kDevices = {"cpu", "cuda"};
  if (std::find(kDevices.begin(), kDevices.end(), f.device) == kDevices.end()) {
    throw InputError("--device: unknown device '" + f.device + "'" + DidYouMean(f.device, kDevices) +
                     "; use cpu (OpenBLAS) or cuda (cuBLAS)");
  }
  r.device = f.device;
  if (f.device != "cpu" && f.threads) throw InputError("--threads: thread counts apply to --device cpu only");
  if (f.dtype) {
    for (const std::string& d : SplitList(*f.dtype, "--dtype")) {
      const GemmDType dtype = ParseGemmDType(d);  // once each: fp32,float32 is one dtype
      if (std::find(r.dtypes.begin(), r.dtypes.end(), dtype) == r.dtypes.end()) r.dtypes.push_back(dtype);
    }
  }
  if (f.threads) {
    for (const std::string& t : SplitList(*f.threads, "--threads")) {
      const uint64_t n = ParseCount(t, "--threads");
      if (n > 4096) throw InputError("--threads: " + t + " threads is more than tally runs (4096)");
      if (std::find(r.threads.begin(), r.threads.end(), static_cast<int>(n)) == r.threads.end()) {
        r.threads.push_back(static_cast<int>(n));
      }
    }
  }
  ReadShapes(f, r);
  if (f.budget) r.bench.budget_s = ParseDuration(*f.budget, "--budget", 's', 3600, kBudgetForms);
  // A tenth of the budget warms up (at least one run: first-touch and thread start-up stay out).
  r.bench.warmup_s = r.bench.budget_s / 10;
  if (f.peak_option != nullptr && f.peak_option->count() > 0) {
    if (f.peak.empty()) {
      r.peak_only = true;
    } else {
      r.peak_flop_per_s = Peaks(f.peak);
    }
  }
  r.bandwidth = f.plot.has_value() || f.calibrate.has_value();
}

// "\r"-rewritten status on a terminal, from one second into the run; silent otherwise.
class Progress {
 public:
  explicit Progress(std::ostream& err) : err_(err), tty_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() {
    if (shown_) err_ << "\r" << std::string(width_, ' ') << "\r" << std::flush;
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void operator()(const std::string& text) {
    if (!tty_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    const std::string line = "tally measure: " + text;
    err_ << "\r" << line << std::string(width_ > line.size() ? width_ - line.size() : 0, ' ') << std::flush;
    width_ = std::max(width_, line.size());
    shown_ = true;
  }

 private:
  std::ostream& err_;
  bool tty_;
  bool shown_ = false;
  size_t width_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

void AddMeasureFlags(CLI::App* cmd, MeasureFlags& f) {
  auto opt = [&](const char* name, std::optional<std::string>& into, const char* help, const char* type) {
    cmd->add_option(name, into, help)->type_name(type);
  };
  cmd->add_option("--device", f.device, "cpu (OpenBLAS, default) | cuda (cuBLAS, loaded at run time)")
      ->type_name("DEVICE");
  opt("--dtype", f.dtype, "comma list: fp32, fp64, bf16 (CPU default fp32,fp64); GPU also tf32, fp16", "LIST");
  opt("--sizes", f.sizes, "square sizes, comma list (default 256,512,1024,2048)", "LIST");
  opt("--shapes", f.shapes, "GEMM shapes MxNxK, comma list, e.g. 2048x768x3072", "LIST");
  opt("--threads", f.threads, "CPU thread counts, comma list (default OpenBLAS's, e.g. OPENBLAS_NUM_THREADS)", "LIST");
  opt("--budget", f.budget, "seconds of repetitions per case after warm-up (default 0.2; at least 3 runs)", "S");
  opt("--model", f.model, "time this model's GEMMs for one training step (with --batch, --seq)", "MODEL");
  f.peak_option = cmd->add_option("--peak", f.peak,
                                  "alone: show the peak (detected and FMA-probed); with FLOP/s or dtype=FLOP/s,...: "
                                  "the peak MFU is measured against")
                      ->expected(0, 1)
                      ->type_name("[FLOP/s]");
  opt("--calibrate", f.calibrate, "write the measured machine as a hardware file (configs/hardware schema)", "FILE");
  opt("--plot", f.plot, "write a roofline chart (SVG) of the results", "FILE.svg");
  auto work = [&](const char* name, std::optional<std::string>& into, const char* help) {
    cmd->add_option(name, into, help)->type_name("N")->group("Model (with --model)");
  };
  work("--batch", f.workload.batch, "sequences (samples) per step; default 1");
  work("--seq", f.workload.seq, "tokens per sequence; default the model's context length");
  cmd->add_flag("--causal", f.workload.causal, "count causal attention's GEMMs as half")->group("Model (with --model)");
  cmd->add_option("--trainable", f.workload.trainable, "COMPONENT=false: no dW GEMMs for a frozen component")
      ->type_name("C=false")
      ->group("Model (with --model)");
  work("--lora", f.workload.lora, "LoRA rank: adapters train, base weights frozen (no base dW)");
}

Report MeasureReport(const MeasureFlags& f, Prepared& prepared, std::ostream& err) {
  MeasureRequest request;
  ReadLists(f, request);
  std::shared_ptr<const LayerGraph> graph;
  if (f.model) {
    if (request.peak_only) throw InputError("--peak: alone it shows the peak and times nothing; drop --model");
    if (f.sizes || f.shapes) throw InputError("--model: times the model's own GEMM shapes; drop --sizes and --shapes");
    if (request.dtypes.size() > 1 || request.threads.size() > 1) {
      throw InputError("--model: times one dtype at one thread count; give one value to --dtype and --threads");
    }
    Evaluation& evaluation = *prepared.evaluation;
    const ModelSpec& spec = evaluation.spec();
    const Settings& settings = prepared.settings;
    evaluation.Summary(settings);  // checks the settings against the model
    graph = evaluation.Graph(GraphSettingsOf(settings));
    request.model = graph.get();
    request.model_label = spec.name + ", batch " + std::to_string(graph->batch) +
                          (graph->family == Family::kTransformer ? ", seq " + std::to_string(graph->seq) : "");
  } else if (f.workload.batch || f.workload.seq || f.workload.lora || f.workload.causal ||
             !f.workload.trainable.empty()) {
    throw InputError("--batch, --seq, --causal, --trainable and --lora apply to --model MODEL");
  }
  CheckWritable(f.plot, "--plot");
  CheckWritable(f.calibrate, "--calibrate");
  Progress progress(err);
  request.progress = [&progress](const std::string& text) { progress(text); };
  MeasureOutcome outcome = RunMeasure(request);
  if (f.plot) WriteFile(*f.plot, RooflineSvg(outcome.chart), "--plot");
  if (f.calibrate) WriteFile(*f.calibrate, outcome.calibration, "--calibrate");
  return std::move(outcome.report);
}

void AddMeasureCommandFlags(CLI::App* cmd, MeasureCommandFlags& f) {
  AddMeasureFlags(cmd, f.measure);
  AddOutputFlags(cmd, f.output);
}

SharedFlags SharedOf(const MeasureCommandFlags& flags) {
  const MeasureFlags& m = flags.measure;
  return {.output = &flags.output, .model = m.model ? &*m.model : nullptr, .workload = &m.workload};
}

std::optional<Report> RunMeasure(const MeasureCommandFlags& f, Prepared& prepared, RunContext& context) {
  return MeasureReport(f.measure, prepared, context.err);
}

}  // namespace tally
