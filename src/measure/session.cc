#include "measure/session.h"

#include <algorithm>
#include <new>

#include "measure/cpu_peak.h"
#include "util/error.h"
#include "util/text.h"
#include "util/units.h"

namespace tally {
namespace {

std::vector<GemmDType> Defaults(const MeasureRequest& r) {
  if (r.model != nullptr) return {r.device == "cuda" ? GemmDType::kBf16 : GemmDType::kFp32};  // what training runs
  if (r.device == "cuda") return {GemmDType::kFp32, GemmDType::kTf32, GemmDType::kBf16, GemmDType::kFp16};
  if (r.peak_only) return {GemmDType::kFp32, GemmDType::kFp64, GemmDType::kBf16};
  return {GemmDType::kFp32, GemmDType::kFp64};
}

// The requested dtypes the backend can run; the others become measure.unsupported.* and a note.
void ChooseDtypes(Session& s) {
  const std::vector<GemmDType> asked = s.request.dtypes.empty() ? Defaults(s.request) : s.request.dtypes;
  if (s.request.peak_only) {  // a peak needs no BLAS kernel
    s.dtypes = asked;
    return;
  }
  std::string reasons;
  for (GemmDType d : asked) {
    const std::string why = s.backend->Unsupported(d);
    if (why.empty()) {
      s.dtypes.push_back(d);
      continue;
    }
    const std::string name = GemmDTypeName(d);
    s.report.Set("measure.unsupported." + name, name + " not measured", why, Unit::kText);
    s.report.notes.push_back(std::string(name).append(" not measured: ").append(why));
    reasons.append(reasons.empty() ? "" : "; ").append(name).append(": ").append(why);
  }
  if (s.dtypes.empty()) throw RuntimeError("nothing to measure: " + reasons);
}

void ChooseThreads(Session& s) {
  if (s.request.device != "cpu") {
    if (!s.request.threads.empty()) throw InputError("--threads: thread counts apply to --device cpu only");
    s.threads = {1};
    return;
  }
  s.threads = s.request.threads.empty() ? std::vector<int>{s.backend->Threads()} : s.request.threads;
  for (int t : s.threads) {
    if (t > s.peaks->Cores()) {
      s.report.notes.push_back("--threads " + std::to_string(t) + " exceeds the " + std::to_string(s.peaks->Cores()) +
                               " cores: MFU is measured against all of them");
    }
  }
}

void Describe(Session& s) {
  s.report.Group("measure", "Measurement");
  s.report.Set("measure.device", "device", s.request.device, Unit::kText);
  s.report.Group("measure.library", s.request.device == "cpu" ? "OpenBLAS" : "CUDA");
  for (const auto& [key, value] : s.backend->Describe()) {
    s.report.Set("measure.library." + Lower(key), key, value, Unit::kText);
  }
  if (s.request.device == "cpu") {
    s.report.Set("measure.library.default_threads", "threads by default", static_cast<uint64_t>(s.backend->Threads()),
                 Unit::kNumber);
  }
}

// The naive check for every (dtype, threads) pair before anything is timed. A dtype whose check
// shapes the library refuses (GemmRefused) is dropped with its reason, as an unsupported one is.
void CheckBackend(Session& s) {
  for (int t : s.threads) {
    s.backend->SetThreads(t);
    for (size_t i = 0; i < s.dtypes.size();) {
      try {
        CheckAgainstNaive(*s.backend, s.dtypes[i]);
        ++i;
      } catch (const GemmRefused& refused) {
        const std::string name = GemmDTypeName(s.dtypes[i]);
        s.report.Set("measure.unsupported." + name, name + " not measured", std::string(refused.what()), Unit::kText);
        s.report.notes.push_back(name + " not measured: " + refused.what());
        s.dtypes.erase(s.dtypes.begin() + static_cast<std::ptrdiff_t>(i));
        if (s.dtypes.empty()) throw RuntimeError("nothing to measure: " + name + ": " + refused.what());
      }
    }
  }
  const bool fp8 = std::find(s.dtypes.begin(), s.dtypes.end(), GemmDType::kFp8) != s.dtypes.end();
  s.report.Set("measure.check", "checked against a naive product",
               std::string("3x5x7, 17x13x11, 64x33x63") + (fp8 ? " (fp8: 16x32x48, 48x16x32, 64x48x16)" : "") +
                   ", each as NN, NT, TN and TT: equal",
               Unit::kText);
}

}  // namespace

void CheckBounds(Session& s, const std::vector<GemmShape>& shapes, const std::string& flag) {
  const bool cpu = s.request.device == "cpu";
  const double memory = static_cast<double>(cpu ? SystemMemoryBytes() : s.backend->Facts().memory_bytes);
  const double allowed_s = std::max(30.0, 10 * s.request.bench.budget_s);
  const double runs = static_cast<double>(s.request.bench.min_reps + 1);
  for (GemmDType d : s.dtypes) {
    const std::string gemm = std::string("the ").append(GemmDTypeName(d)).append(" GEMM ");
    for (const GemmShape& shape : shapes) {
      const double bytes = GemmMinBytes(shape, d);
      if (memory > 0 && bytes > memory) {
        std::string what = flag;
        what.append(": ").append(gemm);
        what.append(shape.Text()).append(" needs ");
        what.append(FormatBytes(static_cast<uint64_t>(std::min(bytes, 1.8e19)), UnitSystem::kIec));
        what.append(" for its operands; the ").append(cpu ? "machine" : "device").append(" has ");
        what.append(FormatBytes(static_cast<uint64_t>(memory), UnitSystem::kIec));
        throw InputError(what);
      }
      for (int t : s.threads) {
        // The CPU's FMA-loop rate: the computed peak trusts a clock that a busy or virtual
        // machine can overstate tenfold.
        const double peak = cpu ? s.peaks->Probed(d, t) : s.peaks->Computed(d, t);
        const double one_s = peak > 0 ? static_cast<double>(shape.Flops()) / peak : 0;
        if (one_s * runs > allowed_s) {
          throw InputError("--budget: " + gemm + shape.Text() + " takes about " + FormatDuration(one_s) +
                           " a run at the peak of " + FormatRate(peak) + ", and runs at least " + FormatDouble(runs) +
                           " times: more than " + FormatDuration(allowed_s) +
                           " (10 x --budget, at least 30 s); raise --budget or time smaller shapes");
        }
      }
    }
  }
}

void OpenSession(Session& s) {
  s.backend = MakeBackend(s.request.device);
  s.peaks = std::make_unique<PeakTable>(*s.backend, s.request.peak_flop_per_s);
  Describe(s);
  ChooseDtypes(s);
  ChooseThreads(s);
  if (!s.request.peak_only) CheckBackend(s);
}

GemmResult TimeOne(Session& s, const GemmShape& shape, GemmDType d, int threads) {
  ++s.done;
  if (s.request.progress) {
    s.request.progress(std::string(GemmDTypeName(d)) + " " + shape.Text() + ", " + std::to_string(threads) +
                       (threads == 1 ? " thread" : " threads") + " (" + std::to_string(s.done) + "/" +
                       std::to_string(s.total) + ")");
  }
  s.backend->SetThreads(threads);
  GemmResult r;
  r.shape = shape;
  r.run_shape = s.backend->RunShape(shape, d);
  r.dtype = d;
  r.device = s.request.device;
  r.threads = threads;
  r.peak_flop_per_s = s.peaks->Computed(d, threads);
  r.peak_basis = s.peaks->PeakBasis(d, threads);
  std::unique_ptr<PreparedGemm> gemm;  // allocated and filled before timing
  try {
    gemm = s.backend->Prepare(shape, d);
  } catch (const GemmRefused& refused) {
    r.skip_reason = refused.what();  // a fact about this shape: the others still run
    return r;
  } catch (const std::bad_alloc&) {
    const uint64_t bytes = static_cast<uint64_t>(GemmMinBytes(shape, d));
    throw RuntimeError("cannot allocate the operands of the " + std::string(GemmDTypeName(d)) + " GEMM " +
                       shape.Text() + " (" + FormatBytes(bytes, UnitSystem::kIec) + ")");
  }
  r.bench = RunBench([&](uint64_t n) { return gemm->Time(n); }, s.request.bench);
  r.flop_per_s = static_cast<double>(shape.Flops()) / r.bench.seconds.median;
  r.probed_flop_per_s = s.peaks->Probed(d, threads);
  return r;
}

void FinishTiming(Session& s, std::vector<GemmResult>& results) {
  const std::string note = s.peaks->RemeasureClock();
  if (!note.empty()) s.report.notes.push_back(note);
  for (GemmResult& r : results) {
    r.peak_flop_per_s = s.peaks->Computed(r.dtype, r.threads);
    r.peak_basis = s.peaks->PeakBasis(r.dtype, r.threads);
    r.peak_refuted = s.peaks->Check(r.dtype).refuted;
  }
}

}  // namespace tally
