// MODEL lookup: a name, path or `org/name[@revision]` resolved against a fake Hugging Face cache in a
// scratch directory, whose refs/main file holds what the input says. The input is "ARG\nREF": ARG is
// the MODEL argument (absolute paths and '..' are skipped, so that only the scratch tree is read),
// REF the bytes of refs/main.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/load_config.h"
#include "fuzz_util.h"

namespace {

namespace fs = std::filesystem;

const fs::path& Scratch() {
  static const fs::path root = [] {
    fs::path dir = fs::temp_directory_path() / ("tally-lookup-fuzz-" + std::to_string(::getpid()));
    const std::string hash(40, 'a');
    const fs::path repo = dir / "hub" / "models--org--name";
    fs::create_directories(repo / "refs");
    fs::create_directories(repo / "snapshots" / hash);
    std::ofstream(repo / "snapshots" / hash / "config.json")
        << R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12,)"
        << R"( "n_head": 12})";
    setenv("HF_HUB_CACHE", (dir / "hub").c_str(), 1);
    fs::current_path(dir);
    return dir;
  }();
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > tally::fuzz::kMaxInput) return -1;
  const fs::path& root = Scratch();
  const std::string input = tally::fuzz::Text(data, size);
  const size_t newline = input.find('\n');
  const std::string arg = input.substr(0, newline);
  if (arg.empty() || arg[0] == '/' || arg.find("..") != std::string::npos || arg.find('\0') != std::string::npos) {
    return -1;
  }
  std::ofstream(root / "hub" / "models--org--name" / "refs" / "main", std::ios::binary | std::ios::trunc)
      << (newline == std::string::npos ? std::string(40, 'a') : input.substr(newline + 1));
  tally::fuzz::Expect([&] { tally::ResolveModel(arg); });
  return 0;
}
