// tally check through the command line: margins near zero, a budget file read in linear time and
// blamed at its line, a model name escaped in the table (issue 20).
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::CheckRefused;
using testing::RunRaw;
using testing::SecondsSince;
using testing::TallyRun;

// Seconds to refuse a budget whose max map has `n` keys and then a duplicate of the first.
double ReadBudgetKeys(int n) {
  std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-budget-" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(file);
    out << "model: gpt2-small\nmax:\n";
    for (int i = 0; i < n; ++i) out << "  k" << i << ": 1\n";
    out << "  k0: 2\n";  // line n + 3
  }
  const auto start = std::chrono::steady_clock::now();
  CheckRefused({"check", "--budget", file.string()},
               file.string() + ":" + std::to_string(n + 3) + ":3: error: duplicate key 'k0' (first at 3:3)");
  const double seconds = SecondsSince(start);
  std::filesystem::remove(file);
  return seconds;
}

}  // namespace

TEST_CASE("check command: no percentage of a limit near zero") {
  const TallyRun r = RunRaw({"check", "gpt2-small", "--max", "flops.approx.six_nd_ratio=1e-320"});
  CHECK(r.code == 1);
  CHECK(r.out.find("inf") == std::string::npos);
  CHECK(r.out.find("false  -1.674\n") != std::string::npos);  // the margin: the limit is 1.674 short
}

TEST_CASE("check command: a budget's max map of 100,000 keys is read in linear time") {
  const double small = ReadBudgetKeys(10000), large = ReadBudgetKeys(100000);
  CAPTURE(small);
  CAPTURE(large);
  CHECK(large < 30 * small + 0.5);
}

TEST_CASE("check command: the table escapes a model name's control characters") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-esc-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "family: sequential\nname: \"\\e[2Jred\"\ninput: [16]\nlayers: [relu]\n";
  const TallyRun r = RunRaw({"check", file.string(), "--max", "params.total=1"});
  CHECK(r.code == 0);
  CHECK(r.out.find("\\x1B[2Jred  params.total") != std::string::npos);
  CHECK(r.out.find('\x1b') == std::string::npos);
  std::filesystem::remove(file);
}

TEST_CASE("check command: a budget file's sp is blamed at its line") {
  std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-sp-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "model: gpt2-small\nsettings: {sp: true}\nmax:\n  params.total: 1B\n";
  CheckRefused({"check", "--budget", file.string()},
               file.string() + ":2:16: error: 'sp': sequence parallelism needs --tp above 1");
  std::filesystem::remove(file);
}

TEST_CASE("check command: a budget's model path is read beside the budget file (issue 28)") {
  // budgets/b.yaml names "models/m.yaml", which is there beside it and not in the working directory.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tally-beside-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "budgets" / "models");
  std::ofstream(dir / "budgets" / "models" / "m.yaml")
      << "name: m\nfamily: sequential\ninput: [4]\nlayers:\n  - linear: {out: 3}\n";  // 4 x 3 + 3 = 15
  std::ofstream(dir / "budgets" / "b.yaml") << "models: [models/m.yaml, gpt2-small]\nmax:\n  params.total: 200M\n";
  const TallyRun r = RunRaw({"check", "--budget", (dir / "budgets" / "b.yaml").string(), "--format", "json"});
  CHECK(r.code == 0);
  CHECK(r.out.find("\"value\": 15,") != std::string::npos);         // the file beside the budget, counted
  CHECK(r.out.find("\"value\": 124439808,") != std::string::npos);  // a preset stays a preset
  std::filesystem::remove_all(dir);
}

TEST_CASE("check command: a key of the other mode says so, not 'unknown' (issue 28)") {
  CheckRefused({"check", "gpt2-small", "--mode", "train", "--max", "memory.infer.total=1GB"},
               "tally: error: --max: 'memory.infer.total' is an inference key, and --mode train reports training only; "
               "drop --mode, or check memory.train.*");
  CheckRefused({"check", "gpt2-small", "--mode", "infer", "--max", "memory.train.total=1GB"},
               "tally: error: --max: 'memory.train.total' is a training key, and --mode infer reports inference only; "
               "drop --mode, or check memory.infer.*");
}

TEST_CASE("check command: a budget file's gpus that tp cannot split are blamed at their line (issue 28)") {
  std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-gpus-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "model: gpt2-small\nsettings: {gpus: 3, tp: 2}\nmax:\n  params.total: 1B\n";
  CheckRefused({"check", "--budget", file.string()},
               file.string() + ":2:18: error: 'gpus': 3 devices cannot be split into --tp 2 x --pp 1 groups");
  // Given on the command line, the flag answers for itself.
  CheckRefused({"check", "--budget", file.string(), "--gpus", "5"},
               "tally: error: --gpus: 5 devices cannot be split into --tp 2 x --pp 1 groups");
  std::filesystem::remove(file);
}

}  // namespace tally
