// MODEL lookup: presets and Hub aliases before paths, snapshot directories, and org/name in a
// fake local Hugging Face cache.
#include "config/model_lookup.h"

#include <doctest/doctest.h>

#include <cstdlib>

#include "config/load_config.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "test_util.h"
#include "weights_test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

namespace fs = std::filesystem;
using testing::Message;
using testing::TempDir;
using testing::WriteFile;

TEST_CASE("lookup: presets resolve before paths, and Hub short names are aliases") {
  CHECK(FindPresetOrAlias("gpt2") != nullptr);
  CHECK(std::string(FindPresetOrAlias("gpt2")->name) == "gpt2-small");  // as on the Hub
  CHECK(std::string(FindPresetOrAlias("GPT2-Medium")->name) == "gpt2-medium");
  CHECK(std::string(FindPresetOrAlias("Llama-2-7b-hf")->name) == "llama-2-7b");
  CHECK(std::string(FindPresetOrAlias("Meta-Llama-3-8B")->name) == "llama-3-8b");
  CHECK(FindPresetOrAlias("gpt3") == nullptr);
  // A dot is not an extension: these are names.
  CHECK_FALSE(LooksLikePath("llama-3.1-8b"));
  CHECK_FALSE(LooksLikePath("qwen2.5-7b"));
  CHECK(LooksLikePath("x.yaml"));
  CHECK(LooksLikePath("model.GGUF"));
  CHECK(LooksLikeHfId("meta-llama/Llama-3.1-8B"));
  CHECK(LooksLikeHfId("meta-llama/Llama-3.1-8B@main"));
  CHECK_FALSE(LooksLikeHfId("configs/none.yaml"));
  CHECK_FALSE(LooksLikeHfId("a/b/c"));
  CHECK(Message([] { ResolveModel("qwen2.5-7b"); }).rfind("tally: error: unknown model 'qwen2.5-7b'", 0) == 0);
  CHECK(Message([] { ResolveModel("configs/none.yaml"); }) == "configs/none.yaml: error: no such file");
  // 124,439,808: GPT-2 small (Hugging Face gpt2, the published count).
  CHECK(CountParams(testing::PresetGraph("gpt2")).total == 124'439'808);
}

TEST_CASE("lookup: a chat or instruction tune of a preset reads as the preset, with a note") {
  std::string note;
  CHECK(std::string(FindTunedPreset("llama-2-7b-chat", note)->name) == "llama-2-7b");
  CHECK(note ==
        "'llama-2-7b-chat': a chat tune of 'llama-2-7b', read as that preset (a tune keeps its base's architecture "
        "and parameter count)");
  // Through an alias, whatever the case: Meta-Llama-3-8B is llama-3-8b, Mistral-7B-v0.1 is mistral-7b.
  CHECK(std::string(FindTunedPreset("Meta-Llama-3-8B-Instruct", note)->name) == "llama-3-8b");
  CHECK(note.find("an instruction tune of 'llama-3-8b'") != std::string::npos);
  CHECK(std::string(FindTunedPreset("Mistral-7B-Instruct-v0.1", note)->name) == "mistral-7b");
  CHECK(std::string(FindTunedPreset("gemma-7b-it", note)->name) == "gemma-7b");
  // Mistral-7B-Instruct-v0.2 is another model (v0.2's 32k context): no preset once "-instruct" is out.
  CHECK(FindTunedPreset("mistral-7b-instruct-v0.2", note) == nullptr);
  CHECK(FindTunedPreset("llama-2-7b-chatty", note) == nullptr);  // a whole word only
  CHECK(FindTunedPreset("instruct-llama-2-7b", note) == nullptr);
  CHECK(FindTunedPreset("gpt3-chat", note) == nullptr);
  // The model is the preset's, and the note goes with it.
  const ModelSpec tuned = ResolveModel("Llama-2-7b-chat-hf");
  CHECK(tuned.name == "llama-2-7b");
  REQUIRE(tuned.notes.size() == 1);
  CHECK(tuned.notes[0].rfind("'Llama-2-7b-chat-hf': a chat tune of 'llama-2-7b'", 0) == 0);
  // 6,738,415,616: Llama-2-7B (the published count of meta-llama/Llama-2-7b-hf and -chat-hf alike).
  CHECK(CountParams(testing::PresetGraph("llama-2-7b")).total == 6'738'415'616);
}

TEST_CASE("lookup: org/name, org/name@main and a hash resolve in a fake Hugging Face cache") {
  TempDir tmp;
  const std::string hash = "0123456789abcdef0123456789abcdef01234567";
  const fs::path repo = tmp.path() / "hub" / "models--openai-community--gpt2";
  WriteFile(repo / "refs" / "main", hash);
  fs::create_directories(repo / "snapshots" / hash);
  fs::copy_file(fs::path(TALLY_TEST_DATA) / "hf" / "gpt2.json", repo / "snapshots" / hash / "config.json");
  SUBCASE("HF_HUB_CACHE") {
    testing::ScopedEnv env("HF_HUB_CACHE", (tmp.path() / "hub").c_str());
    for (const std::string& id : std::vector<std::string>{"openai-community/gpt2", "openai-community/gpt2@main",
                                                          "openai-community/gpt2@" + hash}) {
      CAPTURE(id);
      const ModelSpec spec = ResolveModel(id);
      CHECK(spec.source == id);
      CHECK(CountParams(ResolvedGraph(spec)).total == 124'439'808);
      CHECK_FALSE(spec.checkpoint.has_value());
    }
    CHECK(Message([] { ResolveModel("openai-community/gpt2@v2"); }) ==
          "tally: error: 'openai-community/gpt2@v2' is not in the Hugging Face cache (" +
              (tmp.path() / "hub").string() +
              "); fetch its config with: huggingface-cli download openai-community/gpt2 config.json --revision v2, "
              "or use the preset 'gpt2-small'");
    CHECK(Message([] { ResolveModel("org/absent"); }) ==
          "tally: error: 'org/absent' is not in the Hugging Face cache (" + (tmp.path() / "hub").string() +
              "); fetch its config with: huggingface-cli download org/absent config.json");
  }
  SUBCASE("HF_HOME/hub when HF_HUB_CACHE is unset") {
    unsetenv("HF_HUB_CACHE");
    testing::ScopedEnv env("HF_HOME", tmp.path().c_str());
    CHECK(HfHubCache() == (tmp.path() / "hub").string());
    CHECK(ResolveModel("openai-community/gpt2").name == "openai-community/gpt2");
  }
}

// Issue 28: "dir/loop" has the shape of a Hub ID; a link loop there is named, not looked up in the cache.
TEST_CASE("lookup: a relative symbolic link loop is named as a loop") {
  TempDir tmp;
  fs::create_directories(tmp.path() / "dir");
  fs::create_symlink("loop", tmp.path() / "dir" / "loop");  // relative, to itself
  const fs::path was = fs::current_path();
  fs::current_path(tmp.path());
  const std::string message = Message([] { ResolveModel("dir/loop"); });
  fs::current_path(was);
  CHECK(message == "dir/loop: error: is a symbolic link loop (its links lead back to themselves); nothing to read");
  // A snapshot whose config.json is a loop: named at its path.
  const std::string hash = "0123456789abcdef0123456789abcdef01234567";
  const fs::path snapshot = tmp.path() / "hub" / "models--org--looped" / "snapshots" / hash;
  fs::create_directories(snapshot);
  fs::create_symlink("config.json", snapshot / "config.json");
  testing::ScopedEnv env("HF_HUB_CACHE", (tmp.path() / "hub").c_str());
  CHECK(Message([&] { ResolveModel("org/looped@" + hash); }) ==
        (snapshot / "config.json").string() +
            ": error: is a symbolic link loop (its links lead back to themselves); nothing to read");
}

TEST_CASE("lookup: a directory without config.json reads its one GGUF file") {
  TempDir tmp;
  const fs::path fixture = fs::path(TALLY_TEST_DATA) / "weights" / "tiny-llama.gguf";
  fs::copy_file(fixture, tmp.path() / "tiny-llama.gguf");
  const ModelSpec spec = ResolveModel(tmp.path().string());
  REQUIRE(spec.checkpoint.has_value());
  // make_fixtures.py: 6,400 Q8_0 elements in 34-byte blocks of 32, and 96 F32 norm weights.
  CHECK(spec.checkpoint->bytes == 6'400 / 32 * 34 + 96 * 4);
  fs::copy_file(fixture, tmp.path() / "other.gguf");
  CHECK(Message([&] { ResolveModel(tmp.path().string()); }) ==
        tmp.path().string() + ": error: is a directory of 2 GGUF files and no config.json; name the one to read");
  fs::remove(tmp.path() / "other.gguf");
  fs::remove(tmp.path() / "tiny-llama.gguf");
  CHECK(Message([&] { ResolveModel(tmp.path().string()); }) ==
        tmp.path().string() + ": error: is a directory without a config.json (a model snapshot holds one)");
}

}  // namespace
}  // namespace tally
