// tally sweep through the command line. --keys: a key is known when any point of the grid has it;
// a point without it gets an empty cell (a spreadsheet's blank), and a key no point has is refused
// with nothing on stdout. The default keys fit either mode.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "unit/run_tally.h"

namespace tally {

using testing::CheckRefused;
using testing::RunRaw;
using testing::TallyRun;

TEST_CASE("sweep command: a key only some points have is an empty cell elsewhere, whichever point comes first") {
  // llama-3-8b has 8,030,261,248 parameters (Meta's model card, 8.03B; memory_test). With ZeRO-3 over
  // 8 ranks and the optimizer offloaded, each rank's host holds its 1/8 of Adam's two fp32 moments
  // (8 B), the fp32 master weights (4 B) and the bf16 gradients (2 B): 14 B x P / 8 = 1.75 x P.
  const std::string host = std::to_string(8'030'261'248ULL * 7 / 4);
  CHECK(host == "14052957184");
  const testing::TallyRun none_first = RunRaw({"sweep", "llama-3-8b", "--zero", "3", "--gpus", "8", "--offload",
                                               "none,optimizer", "--keys", "memory.train.host.total"});
  CHECK(none_first.code == 0);
  CHECK(none_first.out ==
        "settings.gpus,settings.zero,settings.offload,status,memory.train.host.total\n"
        "8,3,none,ok,\n"
        "8,3,optimizer,ok," +
            host + "\n");
  const testing::TallyRun optimizer_first = RunRaw({"sweep", "llama-3-8b", "--zero", "3", "--gpus", "8", "--offload",
                                                    "optimizer,none", "--keys", "memory.train.host.total"});
  CHECK(optimizer_first.out ==
        "settings.gpus,settings.zero,settings.offload,status,memory.train.host.total\n"
        "8,3,optimizer,ok," +
            host + "\n8,3,none,ok,\n");
  // An invalid point is skipped in the search: optimizer offload needs ZeRO 2 or 3.
  const testing::TallyRun skips = RunRaw({"sweep", "llama-3-8b", "--gpus", "8", "--zero", "3,1", "--offload",
                                          "none,optimizer", "--keys", "memory.train.host.total"});
  CHECK(skips.code == 0);
  CHECK(skips.out.find("8,3,optimizer,ok," + host + "\n") != std::string::npos);
  CHECK(skips.out.find("8,1,optimizer,invalid: ") != std::string::npos);
}

TEST_CASE("sweep command: a key no point has is refused, suggested from every point's keys") {
  const testing::TallyRun r = RunRaw({"sweep", "llama-3-8b", "--zero", "3", "--gpus", "8", "--offload",
                                      "none,optimizer", "--keys", "memory.train.total,memory.train.host.totl"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "tally: error: --keys: unknown key 'memory.train.host.totl' (did you mean 'memory.train.host.total'?); "
        "'tally estimate MODEL --format json' shows every key\n");
}

}  // namespace tally

namespace tally {

TEST_CASE("sweep command: time keys in inference mode equal time's own report at each point") {
  // time --mode infer restates its settings (the batch it ran); the sweep takes only its time.*
  // group, so the point's settings.batch is the sweep's and the figures are time's.
  const testing::TallyRun sweep = testing::RunRaw({"sweep", "gpt2-small", "--mode", "infer", "--batch", "1,2",
                                                   "--hardware", "h100", "--keys", "time.tpot_seconds"});
  REQUIRE(sweep.code == 0);
  for (const char* batch : {"1", "2"}) {
    const testing::TallyRun one = testing::RunRaw({"time", "gpt2-small", "--mode", "infer", "--batch", batch,
                                                   "--hardware", "h100", "--get", "time.tpot_seconds"});
    REQUIRE(one.code == 0);
    const std::string row = std::string(batch) + ",infer,h100,ok," + one.out;  // one.out ends in a newline
    CHECK(sweep.out.find(row) != std::string::npos);
  }
}

TEST_CASE("sweep command: time's own flags hold at every point, as time itself reads them (issue 28)") {
  // --tokens, --mfu, --prompt, --kernels: each changes the time.* keys exactly as it changes time's report.
  const std::vector<std::vector<std::string>> cases = {
      {"--tokens", "1B"}, {"--mfu", "0.5"}, {"--kernels", "fused"}, {"--days", "2"}};
  for (const std::vector<std::string>& flags : cases) {
    CAPTURE(flags[0]);
    std::vector<std::string> sweep_args = {"sweep",      "gpt2-small", "--batch", "1,2",
                                           "--hardware", "h100",       "--keys",  "time.train_seconds,time.tokens"};
    sweep_args.insert(sweep_args.end(), flags.begin(), flags.end());
    const testing::TallyRun sweep = testing::RunRaw(sweep_args);
    REQUIRE(sweep.code == 0);
    for (const char* batch : {"1", "2"}) {
      std::string row = std::string(batch) + ",h100,ok";
      for (const char* key : {"time.train_seconds", "time.tokens"}) {
        std::vector<std::string> args = {"time", "gpt2-small", "--batch", batch, "--hardware", "h100", "--get", key};
        args.insert(args.end(), flags.begin(), flags.end());
        const testing::TallyRun one = testing::RunRaw(args);
        REQUIRE(one.code == 0);
        row += "," + one.out.substr(0, one.out.size() - 1);
      }
      CHECK(sweep.out.find(row + "\n") != std::string::npos);
    }
  }
  // A bad value is refused before any row, named by its flag.
  CheckRefused({"sweep", "gpt2-small", "--hardware", "h100", "--keys", "time.step_seconds", "--mfu", "2"},
               "tally: error: --mfu: '2' is not a ratio in [1e-6, 1], such as 0.4");
}

TEST_CASE("sweep command: the default keys fit either mode, an unknown key fails with every point invalid") {
  const TallyRun infer = RunRaw({"sweep", "gpt2-small", "--mode", "infer"});
  CHECK(infer.code == 0);
  CHECK(infer.out.rfind("settings.mode,status,params.total,flops.step,memory.train.total,memory.infer.total\n", 0) ==
        0);
  CheckRefused({"sweep", "gpt2-small", "--keys", "nope", "--batch", "0"},
               "tally: error: --keys: unknown key 'nope'; 'tally estimate MODEL --format json' shows every key");
}

}  // namespace tally

namespace tally {
namespace {

// The sweep's row at `settings` (its settings columns, in the grid's order), or empty.
std::string RowAt(const std::string& csv, const std::string& settings) {
  const size_t at = csv.find("\n" + settings + ",");
  if (at == std::string::npos) return "";
  return csv.substr(at + 1, csv.find('\n', at + 1) - at - 1);
}

// `command`'s own answer for `key` at one point, as the sweep would print it.
std::string Get(const std::string& command, const std::vector<std::string>& flags, const std::string& key) {
  std::vector<std::string> args = {command, "llama-2-7b", "--get", key};
  args.insert(args.end(), flags.begin(), flags.end());
  const testing::TallyRun run = testing::RunRaw(args);
  REQUIRE(run.code == 0);
  return run.out.substr(0, run.out.size() - 1);
}

std::string List(uint64_t first, uint64_t last) {
  std::string out;
  for (uint64_t v = first; v <= last; ++v) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

TEST_CASE("sweep command: a large grid's rows equal memory's, estimate's and time's own answers (issue 31)") {
  // 700 sequence lengths x 2 attention kernels: 1,400 graphs, more than an evaluation keeps by
  // default (1,024). Outermost, the sequence length is never revisited and the cache evicts; inside
  // the micro-batch, every graph comes round again and the sweep keeps them all.
  const std::string seqs = List(1, 700);
  struct Grid {
    std::vector<std::string> args;
    std::vector<std::vector<std::string>> points;  // each point's flags, in the grid's column order
  };
  const std::vector<Grid> grids = {
      {{"--seq", seqs, "--precision", "mixed-bf16,fp32", "--attention", "eager,flash", "--zero", "0,3"},
       {{"--seq", "1", "--precision", "mixed-bf16", "--attention", "eager", "--zero", "0"},
        {"--seq", "333", "--precision", "fp32", "--attention", "flash", "--zero", "3"},
        {"--seq", "700", "--precision", "fp32", "--attention", "eager", "--zero", "3"}}},
      {{"--micro-batch", "1,2", "--seq", seqs, "--attention", "eager,flash"},
       {{"--micro-batch", "1", "--seq", "699", "--attention", "flash"},
        {"--micro-batch", "2", "--seq", "1", "--attention", "eager"},
        {"--micro-batch", "2", "--seq", "700", "--attention", "flash"}}},
  };
  const std::vector<std::pair<std::string, std::string>> keys = {{"memory", "memory.train.total"},
                                                                 {"memory", "memory.infer.total"},
                                                                 {"memory", "memory.train.activations"},
                                                                 {"estimate", "flops.step"},
                                                                 {"time", "time.step_seconds"}};
  std::string key_list;
  for (const auto& [command, key] : keys) key_list += (key_list.empty() ? "" : ",") + key;
  for (const Grid& grid : grids) {
    std::vector<std::string> args = {"sweep", "llama-2-7b", "--hardware", "h100", "--keys", key_list};
    args.insert(args.end(), grid.args.begin(), grid.args.end());
    const testing::TallyRun sweep = testing::RunRaw(args);
    REQUIRE(sweep.code == 0);
    for (const std::vector<std::string>& point : grid.points) {
      std::string settings;
      for (size_t i = 1; i < point.size(); i += 2) settings += (settings.empty() ? "" : ",") + point[i];
      settings += ",h100";
      CAPTURE(settings);
      std::vector<std::string> flags = point;
      flags.insert(flags.end(), {"--hardware", "h100"});
      std::string expected = settings + ",ok";
      for (const auto& [command, key] : keys) expected += "," + Get(command, flags, key);
      CHECK(RowAt(sweep.out, settings) == expected);
    }
  }
}

}  // namespace
}  // namespace tally
