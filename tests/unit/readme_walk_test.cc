// README "The first ten minutes", command by command: each exits as the README says and prints the
// figure it quotes. The figures are derived independently where they can be (comments); the rest
// are the README's own quotations, so a change in either shows here.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "run_tally.h"

namespace tally {
namespace {

struct Step {
  std::vector<std::string> args;
  int code;
  std::string shows;  // a substring of stdout
};

TEST_CASE("readme walk: the first ten minutes") {
  const std::vector<Step> steps = {
      {{"models"}, 0, "gpt2-small"},
      {{"models", "gpt2"}, 0, "gpt2-small"},
      // 50257·768 + 1024·768 + 12·7,087,872 + 2·768 (shared/reference: GPT-2 small, tied head).
      {{"params", "gpt2", "--get", "params.total"}, 0, "124439808\n"},
      {{"flops", "gpt2", "--get", "flops.forward"}, 0, "291648307200\n"},
      // 2 · 2048 · 768 · 3072 = 9,663,676,416.
      {{"flops", "--gemm", "2048x768x3072", "--get", "flops.forward"}, 0, "9663676416\n"},
      {{"hardware", "h100"}, 0, "h100-sxm"},
      {{"memory", "llama-3-8b", "--hardware", "h100", "--get", "memory.train.fits"}, 0, "false\n"},
      {{"memory", "llama-3-8b", "--hardware", "h100", "--zero", "3", "--gpus", "8", "--recompute", "full", "--get",
        "memory.train.fits"},
       0,
       "true\n"},
      {{"fit", "llama-3-8b", "--hardware", "h100", "--zero", "3", "--gpus", "8", "--seq", "4096", "--recompute", "full",
        "--get", "fit.micro_batch"},
       0,
       "7\n"},
      {{"time", "llama-3-8b", "--hardware", "h100", "--gpus", "64", "--zero", "3", "--recompute", "full", "--tokens",
        "1T"},
       0,
       "26.6 days"},
      {{"check", "gpt2", "--max", "params.total=100M"}, 1, "124.44 M"},
  };
  for (const Step& step : steps) {
    CAPTURE(step.args[0]);
    CAPTURE(step.args.size());
    const testing::TallyRun r = testing::RunTally(step.args);
    CHECK(r.code == step.code);
    CHECK(r.out.find(step.shows) != std::string::npos);
  }
}

}  // namespace
}  // namespace tally
