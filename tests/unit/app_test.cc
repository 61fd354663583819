// The entry point (cli/app.cc): --version, a missing MODEL, an error with stdout empty, and warnings
// escaped for the terminal.
#include "cli/app.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "unit/run_tally.h"

namespace tally {
namespace {

using testing::CheckRefused;
using testing::RunRaw;
using testing::TallyRun;

}  // namespace

TEST_CASE("app: a warning on stderr escapes a model name's control characters") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-warn-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "family: transformer\nname: \"x\\e[31m\"\nvocab_size: 100\ncontext_length: 16\nd_model: 64\n"
                         "n_layers: 1\nn_heads: 4\nd_ff: 128\nposition: rope\n";
  const TallyRun w = RunRaw({"estimate", file.string(), "--seq", "32", "--format", "json"});
  CHECK(w.code == 0);
  CHECK(w.err == "tally: warning: sequence length 32 exceeds the context length 16 of 'x\\x1B[31m'\n");
  std::filesystem::remove(file);
}

TEST_CASE("app: tally params with no MODEL names MODEL") {
  CheckRefused({"params"}, "tally: error: MODEL is required; run 'tally params --help' for usage");
}

TEST_CASE("app: CLI11's errors come in tally's words, naming what was typed") {
  CheckRefused({"estimate", "gpt2", "--batch", "1", "--batch", "2"},
               "tally: error: --batch: given more than once; give it once");
  CheckRefused({"fit", "gpt2", "--memory", "24GiB", "--solve"},
               "tally: error: --solve: needs a value (batch|seq|gpus|recompute); run 'tally fit --help' for usage");
  CheckRefused({"estimate", "gpt2", "gpt2"},
               "tally: error: unexpected argument 'gpt2'; run 'tally estimate --help' for usage");
  // A memory budget given to memory points to the commands that take one (issue 28).
  CheckRefused({"memory", "gpt2", "--memory", "24GiB"},
               "tally: error: unknown flag '--memory'; a memory budget is fit's ('tally fit MODEL --memory SIZE': the "
               "largest batch, seq or fewest GPUs that fit) or check's ('tally check MODEL --max "
               "memory.train.device=SIZE')");
}

TEST_CASE("app: --version names the version and the commit") {
  std::ostringstream out, err;
  CHECK(RunMain({"--version"}, out, err) == 0);
  const std::string text = out.str();
  CHECK(text.rfind(std::string("tally ") + TALLY_VERSION + " (commit ", 0) == 0);
  CHECK(text.size() > 25);
  CHECK(text.substr(text.size() - 2) == ")\n");
}

TEST_CASE("app: an error leaves stdout empty") {
  std::ostringstream out, err;
  CHECK(RunMain({"estimate", "gpt2-small", "--format", "json", "--get", "nope"}, out, err) == 2);
  CHECK(out.str().empty());
  CHECK(err.str().find("unknown key 'nope'") != std::string::npos);
}

}  // namespace tally
