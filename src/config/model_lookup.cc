#include "config/model_lookup.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <vector>

#include "config/gguf.h"
#include "config/load_config.h"
#include "config/quantization.h"
#include "config/safetensors.h"
#include "util/text.h"

namespace tally {
namespace {

namespace fs = std::filesystem;

bool EndsWith(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Hub repository names (lower-cased) whose preset has another name; a name equal to a preset's
// but for case needs no row.
const std::map<std::string, std::string>& Aliases() {
  static const std::map<std::string, std::string> kAliases = {
      {"gpt2", "gpt2-small"},
      {"llama-2-7b-hf", "llama-2-7b"},
      {"llama-2-13b-hf", "llama-2-13b"},
      {"llama-2-70b-hf", "llama-2-70b"},
      {"meta-llama-3-8b", "llama-3-8b"},
      {"meta-llama-3-70b", "llama-3-70b"},
      {"mistral-7b-v0.1", "mistral-7b"},
      {"mixtral-8x7b-v0.1", "mixtral-8x7b"},
      {"phi-3-mini-4k-instruct", "phi-3-mini"},
  };
  return kAliases;
}

bool HubChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

bool HubName(std::string_view s) {
  return !s.empty() && s.front() != '.' && s.find("..") == std::string_view::npos &&
         std::all_of(s.begin(), s.end(), HubChar);
}

bool IsHex40(const std::string& s) {
  return s.size() == 40 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// config.json's quantization_config, when it has one tally reads; another is a note.
ModelSpec WithQuantization(ModelSpec spec, const std::string& config) {
  if (!EndsWith(Lower(config), ".json")) return spec;
  QuantizationSpec q;
  const std::string text = ReadFileText(config);
  if (ReadQuantization(config, text, q)) {
    spec.quantization = q;
    if (q.ct.kv_cache_scheme) {
      spec.notes.push_back(config +
                           ": quantization_config.kv_cache_scheme is not applied (--kv-dtype sets the "
                           "KV cache dtype; its k_scale and v_scale are not counted)");
    }
    // A tied head is the embedding matrix, which compressed-tensors leaves alone (it quantizes Linear
    // modules): tally cannot say how such a checkpoint stores the head.
    if (spec.family == Family::kTransformer && spec.transformer.tied_embeddings &&
        q.method == QuantMethod::kCompressedTensors && Quantizes(q, QuantModule::kHead)) {
      throw InputError({config, 0, 0},
                       "quantization_config (compressed-tensors): the head is tied to the embedding and not in "
                       "'ignore'; tally cannot tell how the tied head is stored (add \"lm_head\" to ignore)");
    }
  } else if (text.find("\"quantization_config\"") != std::string::npos) {
    spec.notes.push_back(config +
                         ": this quantization_config is not one tally reads (fp8, mxfp4, bitsandbytes, "
                         "gptq, awq, compressed-tensors)");
  }
  return spec;
}

// A snapshot directory: its config.json, and the safetensors weights in it when there are any.
ModelSpec LoadSnapshot(const fs::path& dir, const std::string& shown) {
  const fs::path config = dir / "config.json";
  std::error_code ec;
  if (!fs::exists(config, ec) && fs::is_directory(dir, ec)) {
    // A GGUF repository's snapshot: one model file (or the first of its splits), no config.json.
    std::vector<std::string> ggufs;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (EndsWith(Lower(name), ".gguf") &&
          (name.find("-of-") == std::string::npos || name.find("-00001-of-") != std::string::npos)) {
        ggufs.push_back(e.path().string());
      }
    }
    if (ggufs.size() == 1) return LoadGguf(ggufs[0]);
    throw InputError({shown, 0, 0}, ggufs.empty() ? "is a directory without a config.json (a model snapshot holds one)"
                                                  : "is a directory of " + std::to_string(ggufs.size()) +
                                                        " GGUF files and no config.json; name the one to read");
  }
  ModelSpec spec = WithQuantization(LoadModelFile(config.string()), config.string());
  CheckpointInfo weights = ReadSafetensors(dir.string(), spec.notes);
  if (!weights.files.empty()) spec.checkpoint = std::move(weights);
  return spec;
}

// Weights alone: the architecture comes from the config.json beside them.
ModelSpec LoadBesideConfig(const std::string& weights) {
  const fs::path config = fs::path(weights).parent_path() / "config.json";
  std::error_code ec;
  if (!fs::exists(config, ec)) {
    throw InputError({weights, 0, 0},
                     "no config.json beside these weights; tally takes the architecture from it "
                     "(give the snapshot directory, or put the model's config.json there)");
  }
  ModelSpec spec = WithQuantization(LoadModelFile(config.string()), config.string());
  CheckpointInfo info = ReadSafetensors(weights, spec.notes);
  if (!info.files.empty()) spec.checkpoint = std::move(info);
  return spec;
}

}  // namespace

const EmbeddedPreset* FindPresetOrAlias(const std::string& name) {
  if (const EmbeddedPreset* p = FindPreset(name)) return p;
  const std::string lower = Lower(name);
  auto alias = Aliases().find(lower);
  return FindPreset(alias == Aliases().end() ? lower : alias->second);
}

const EmbeddedPreset* FindTunedPreset(const std::string& name, std::string& note) {
  const std::string lower = Lower(name);
  for (const std::string_view word : {"-instruct", "-chat", "-it"}) {
    // A whole word: followed by the end or by "-" ("-instruct-v0.1"), and never the first one.
    for (size_t at = lower.find(word, 1); at != std::string::npos; at = lower.find(word, at + 1)) {
      const size_t end = at + word.size();
      if (end != lower.size() && lower[end] != '-') continue;
      const std::string base = lower.substr(0, at) + lower.substr(end);
      if (const EmbeddedPreset* p = FindPresetOrAlias(base)) {
        note = "'" + name + "': " + (word == "-chat" ? "a chat" : "an instruction") + " tune of '" + p->name +
               "', read as that preset (a tune keeps its base's architecture and parameter count)";
        return p;
      }
    }
  }
  return nullptr;
}

bool LooksLikePath(const std::string& arg) {
  if (arg.find('/') != std::string::npos || arg.find('\\') != std::string::npos) return true;
  for (std::string_view ext : {".yaml", ".yml", ".json", ".safetensors", ".gguf"}) {
    if (EndsWith(Lower(arg), ext)) return true;
  }
  return false;
}

bool LooksLikeHfId(const std::string& arg) {
  const size_t slash = arg.find('/');
  if (slash == std::string::npos) return false;
  const size_t at = arg.find('@', slash);
  const std::string org = arg.substr(0, slash);
  const std::string name = arg.substr(slash + 1, at == std::string::npos ? std::string::npos : at - slash - 1);
  if (!HubName(org) || !HubName(name)) return false;
  // "configs/x.yaml" is a missing file, not a repository.
  for (std::string_view ext : {".yaml", ".yml", ".json", ".safetensors", ".gguf"}) {
    if (EndsWith(Lower(name), ext)) return false;
  }
  return at == std::string::npos || at + 1 < arg.size();
}

std::string HfHubCache() {
  if (std::string v = Env("HF_HUB_CACHE"); !v.empty()) return v;
  if (std::string v = Env("HF_HOME"); !v.empty()) return (fs::path(v) / "hub").string();
  if (std::string v = Env("XDG_CACHE_HOME"); !v.empty()) return (fs::path(v) / "huggingface" / "hub").string();
  return (fs::path(Env("HOME")) / ".cache" / "huggingface" / "hub").string();
}

ModelSpec LoadModelPath(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return LoadSnapshot(path, path);
  if (EndsWith(Lower(path), ".gguf")) return LoadGguf(path);
  if (IsSafetensorsPath(path)) return LoadBesideConfig(path);
  return WithQuantization(LoadModelFile(path), path);
}

ModelSpec LoadHfCached(const std::string& id) {
  const size_t at = id.find('@');
  const std::string repo = id.substr(0, at);
  const std::string revision = at == std::string::npos ? "main" : id.substr(at + 1);
  std::string folder = "models--" + repo;
  folder.replace(folder.find('/'), 1, "--");
  const fs::path root = fs::path(HfHubCache()) / folder;
  std::string hash = revision;
  std::error_code ec;
  if (!IsHex40(revision) && revision.find("..") == std::string::npos) {
    std::ifstream ref(root / "refs" / revision);
    hash.clear();
    if (ref) std::getline(ref, hash);
    while (!hash.empty() && std::isspace(static_cast<unsigned char>(hash.back()))) hash.pop_back();
  }
  const fs::path snapshot = root / "snapshots" / hash;
  if (IsHex40(hash) && !fs::exists(snapshot / "config.json", ec) && ec.value() == ELOOP) {
    throw InputError({(snapshot / "config.json").string(), 0, 0}, kSymlinkLoop);
  }
  if (!IsHex40(hash) || !fs::exists(snapshot / "config.json", ec)) {
    std::string hint;
    if (const EmbeddedPreset* p = FindPresetOrAlias(repo.substr(repo.find('/') + 1))) {
      hint = ", or use the preset '" + std::string(p->name) + "'";
    }
    throw InputError("'" + id + "' is not in the Hugging Face cache (" + HfHubCache() +
                     "); fetch its config with: huggingface-cli download " + repo + " config.json" +
                     (at == std::string::npos ? "" : " --revision " + revision) + hint);
  }
  ModelSpec spec = LoadSnapshot(snapshot, id);
  spec.source = id;
  if (spec.name == hash) spec.name = repo;  // no _name_or_path: the Hub ID, not the snapshot's hash
  return spec;
}

}  // namespace tally
