// Output integrity: every command with JSON output prints a document that parses, for several
// presets of each family; every command's other formats print something; and an error, however
// late, leaves stdout empty. (estimate, params, flops and memory over every preset are in
// invariants_test.cc.)
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "unit/run_tally.h"

namespace tally {
namespace {

using Run = testing::TallyRun;

// Every run goes through RunTally: JSON, CSV, --get and the ledgers are checked each time.
Run Tally(const std::vector<std::string>& args) { return testing::RunTally(args); }

std::string Joined(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& a : args) text += (text.empty() ? "" : " ") + a;
  return text;
}

// A transformer with learned positions, one with RoPE and GQA, a mixture of experts, and a
// sequential model (convolutions).
const std::vector<std::string> kPresets = {"gpt2-small", "llama-3-8b", "mixtral-8x7b", "seed-cnn"};

TEST_CASE("output: every command's JSON parses, for several presets") {
  for (const std::string& preset : kPresets) {
    const bool transformer = preset != "seed-cnn";
    std::vector<std::vector<std::string>> commands = {
        {"estimate", preset},
        {"params", preset},
        {"flops", preset},
        {"memory", preset},
        {"fit", preset, "--memory", "80GiB"},
        {"fit", preset, "--memory", "80GiB", "--solve", "gpus"},
        {"check", preset, "--max", "params.total=1T"},
        {"check", preset, "--max", "params.total=1"},  // fails: exit 1, still a document
        {"sweep", preset, "--batch", "1,2,4"},
        {"estimate", preset, "--layers"},
    };
    if (transformer) {
      commands.push_back({"time", preset, "--hardware", "h100-sxm", "--tokens", "1B"});
      commands.push_back({"time", preset, "--hardware", "a100-80gb", "--mode", "infer", "--batch", "4"});
      commands.push_back({"sweep", preset, "--seq", "512,1024", "--zero", "0,3", "--gpus", "8"});
    }
    for (std::vector<std::string> args : commands) {
      args.insert(args.end(), {"--format", "json"});
      CAPTURE(Joined(args));
      const Run r = Tally(args);
      CAPTURE(r.err);
      CHECK(r.code <= 1);
      CHECK(nlohmann::json::accept(r.out));
      if (nlohmann::json::accept(r.out)) CHECK(nlohmann::json::parse(r.out)["schema"] == "tally/1");
    }
    // JSON lines: one document per line.
    const Run jsonl = Tally({"sweep", preset, "--batch", "1,2", "--format", "jsonl"});
    CHECK(jsonl.code == 0);
    std::istringstream lines(jsonl.out);
    int rows = 0;
    for (std::string line; std::getline(lines, line); ++rows) CHECK(nlohmann::json::accept(line));
    CHECK(rows == 2);
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"models", "--format", "json"},
           {"hardware", "--format", "json"},
           {"dtypes", "--format", "json"},
           {"dtypes", "--value", "1e-8", "--format", "json"},
       }) {
    CAPTURE(Joined(args));
    const Run r = Tally(args);
    CHECK(r.code == 0);
    CHECK(nlohmann::json::accept(r.out));
  }
}

TEST_CASE("output: commands without JSON print their text and exit 0") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"completion", "bash"},
           {"completion", "zsh"},
           {"models"},
           {"hardware"},
           {"dtypes"},
           {"models", "--format", "csv"},
           {"hardware", "--format", "csv"},
           {"dtypes", "--format", "tsv"},
       }) {
    CAPTURE(Joined(args));
    const Run r = Tally(args);
    CHECK(r.code == 0);
    CHECK(!r.out.empty());
    CHECK(r.err.empty());
  }
}

TEST_CASE("output: an error partway leaves stdout empty and one line on stderr") {
  // Each fails after the model is read and its report computed, or at the very end.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"estimate", "llama-3-8b", "--format", "json", "--get", "memory.train.totl"},
           {"flops", "gpt2-small", "--seq", "4096", "--format", "json"},              // past learned positions
           {"memory", "llama-2-7b", "--tp", "3", "--gpus", "3", "--format", "json"},  // 32 heads
           {"check", "gpt2-small", "--max", "params.totl=1B", "--format", "json"},
           {"sweep", "gpt2-small", "--batch", "1,2", "--keys", "memory.train.totl", "--format", "json"},
           {"sweep", "gpt2-small", "--batch", "1,2", "--format", "xml"},
           // Streamed rows wait until the keys are checked at the first valid point (here the second).
           {"sweep", "gpt2-small", "--batch", "0,1", "--keys", "memory.train.totl"},
           {"time", "gpt2-small", "--hardware", "h100-sxm", "--tokens", "1B", "--get", "time.nope"},
           {"time", "llama-2-7b", "--hardware", "h100-sxm", "--seq", "10000000", "--tokens", "1B"},
           {"fit", "gpt2-small", "--memory", "0.5", "--format", "json"},
           // Found by fuzzing: the "does not fit" verdict was printed before the bad key failed.
           {"fit", "llama-2-7b", "--memory", "24GiB", "--solve", "gpus", "--get", "vit.gpus"},
           {"dtypes", "--value", "lots", "--format", "json"},
       }) {
    CAPTURE(Joined(args));
    const Run r = Tally(args);
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("output: a failed write is a runtime error (exit 3), not a silent success") {
  std::ostringstream out, err;
  out.setstate(std::ios::badbit);
  CHECK(RunMain({"params", "gpt2-small", "--format", "json"}, out, err) == 3);
  CHECK(err.str().find("cannot write the output") != std::string::npos);
  // sweep writes as it goes: a stream that fails stops it with the same error.
  std::ostringstream sweep_out, sweep_err;
  sweep_out.setstate(std::ios::badbit);
  CHECK(RunMain({"sweep", "gpt2-small", "--batch", "1,2,4"}, sweep_out, sweep_err) == 3);
  CHECK(sweep_err.str().find("cannot write the output") != std::string::npos);
}

}  // namespace
}  // namespace tally
