// Sharded safetensors checkpoints: a model.safetensors.index.json and its shards, or a directory of
// *.safetensors files. The index maps each tensor to its shard; every shard's header is read.
#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "config/json_scan.h"
#include "config/load_config.h"
#include "config/safetensors.h"
#include "util/checked_math.h"
#include "util/units.h"

namespace tally {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

void AddFile(CheckpointInfo& info, const std::string& path, SafetensorsHeader&& h) {
  info.files.push_back(path);
  const std::string* last_dtype = nullptr;
  uint64_t* dtype_bytes = nullptr;
  for (CheckpointTensor& t : h.tensors) {
    info.elements = CheckedAdd(info.elements, t.elements, "the checkpoint's elements");
    info.bytes = CheckedAdd(info.bytes, t.bytes, "the checkpoint's bytes");
    if (last_dtype == nullptr || t.dtype != *last_dtype) {  // runs of one dtype look it up once
      std::string dtype = t.dtype;
      std::transform(dtype.begin(), dtype.end(), dtype.begin(),
                     [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
      dtype_bytes = &info.bytes_by_dtype[dtype];
    }
    *dtype_bytes += t.bytes;
    info.tensors.push_back(std::move(t));
    last_dtype = &info.tensors.back().dtype;
  }
}

// The most helper threads that read headers at once. Each file costs an open, a read from the page
// cache and a parse of its JSON, independent of the others; a bound keeps a many-core machine from
// starting (and giving a malloc arena to) a thread per core for work of tens of milliseconds.
constexpr unsigned kMaxReaders = 8;

// Hands each file's header to `use(i, header)` in the files' order, as reading them one by one
// would, and throws what reading or `use` throws first in that order: the first bad file is the one
// reported. For two files or more, helper threads (one per CPU, at most kMaxReaders) read ahead
// while the calling thread uses each header as soon as it and those before it are read, and frees
// it, so that the headers are not all held at once.
void ForEachHeader(const std::vector<std::string>& paths, const std::function<void(size_t, SafetensorsHeader&&)>& use) {
  struct Slot {
    SafetensorsHeader header;
    std::exception_ptr error;
    std::atomic<bool> ready{false};
  };
  std::vector<Slot> slots(paths.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    for (size_t i = next++; i < paths.size() && !stop.load(); i = next++) {
      try {
        slots[i].header = ReadSafetensorsFile(paths[i]);
      } catch (...) {
        slots[i].error = std::current_exception();
      }
      slots[i].ready.store(true, std::memory_order_release);
      slots[i].ready.notify_one();
    }
  };
  const size_t n_helpers =
      paths.size() < 2 ? 0 : std::min<size_t>({paths.size(), std::thread::hardware_concurrency(), kMaxReaders});
  std::vector<std::jthread> helpers;
  // On the way out, error or not: no file is started after this, and the helpers are joined.
  struct Finish {
    std::atomic<bool>& stop;
    std::vector<std::jthread>& helpers;
    ~Finish() {
      stop = true;
      helpers.clear();
    }
  } finish{stop, helpers};
  for (size_t t = 0; t < n_helpers; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {  // no more threads to be had: fewer read ahead
      break;
    }
  }
  if (helpers.empty()) {  // one file, or no thread to be had: read here, one by one
    for (size_t i = 0; i < paths.size(); ++i) use(i, ReadSafetensorsFile(paths[i]));
    return;
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    slots[i].ready.wait(false, std::memory_order_acquire);
    if (slots[i].error) std::rethrow_exception(slots[i].error);
    use(i, std::move(slots[i].header));
    slots[i].header = SafetensorsHeader{};
  }
}

// An entry's shard must be a file beside the index: a relative path with no ".." component, so that
// an entry such as "../../../etc/passwd" cannot open a file outside the snapshot.
void CheckShard(const std::string& index, std::string_view tensor, std::string_view shard) {
  const fs::path p(shard);
  if (shard.empty() || p.has_root_path()) {
    throw InputError({index, 0, 0},
                     "'weight_map' entry '" + QuoteInput(tensor) + "' must name a shard file beside the index");
  }
  for (const fs::path& part : p) {
    if (part == "..") {
      throw InputError({index, 0, 0}, "'weight_map' entry '" + QuoteInput(tensor) + "' names '" + QuoteInput(shard) +
                                          "', which is outside the index's folder (a shard file must be beside it)");
    }
  }
}

// An index's weight_map as (tensor, shard) pairs in the order nlohmann::json gives them (by tensor,
// the last of a repeated name), and metadata.total_size when it is an unsigned integer.
struct WeightMap {
  std::vector<std::pair<std::string_view, std::string_view>> entries;
  std::optional<uint64_t> total_size;
};

// The index in one pass, when it keeps to JsonScan's subset: {"metadata": {key: string or integer},
// "weight_map": {tensor: shard}}, each key once (a repeated tensor is resolved as the tree does).
bool ScanIndex(std::string_view text, WeightMap& map) {
  JsonScan scan(text);
  bool metadata = false, weight_map = false;
  map.entries.reserve(text.size() / 64);  // an entry takes 60 to 100 bytes
  const bool ok = scan.Object([&](std::string_view key) {
    if (key == "metadata" && !metadata) {
      metadata = true;
      return scan.Object([&](std::string_view name) {
        uint64_t v = 0;
        if (name != "total_size") return scan.StringOrUint();
        if (map.total_size || !scan.Uint(v)) return false;
        map.total_size = v;
        return true;
      });
    }
    if (key == "weight_map" && !weight_map) {
      weight_map = true;
      return scan.Object([&](std::string_view tensor) {
        std::string_view shard;
        map.entries.emplace_back(tensor, shard);
        return scan.String(map.entries.back().second);
      });
    }
    return false;
  });
  if (!ok || !weight_map || !scan.End()) return false;
  auto by_tensor = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(map.entries.begin(), map.entries.end(), by_tensor)) {
    std::stable_sort(map.entries.begin(), map.entries.end(), by_tensor);
  }
  // Of a repeated tensor the last stands, as in the tree.
  size_t kept = 0;
  for (size_t i = 0; i < map.entries.size(); ++i) {
    if (i + 1 < map.entries.size() && map.entries[i + 1].first == map.entries[i].first) continue;
    map.entries[kept++] = map.entries[i];
  }
  map.entries.resize(kept);
  return true;
}

// The index through nlohmann::json, for what ScanIndex leaves: the rare form, and every error.
// `root` keeps the strings that the map's entries view.
void ReadIndexTree(const std::string& index, const std::string& text, Json& root, WeightMap& map) {
  if (const size_t deep = NestedTooDeep(text); deep != std::string_view::npos) {
    throw AtByte(index, deep, "values are nested more than " + std::to_string(kJsonMaxNesting) + " levels deep");
  }
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw AtByte(index, e.byte > 0 ? e.byte - 1 : 0, "not valid JSON: " + NlohmannReason(e.what()));
  } catch (const Json::exception& e) {
    throw AtByte(index, 0, std::string("not valid JSON: ") + (e.id == 406 ? "a number out of range" : "bad value"));
  }
  if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object()) {
    throw InputError({index, 0, 0}, "a safetensors index needs a 'weight_map' object of tensor -> shard file");
  }
  for (const auto& [tensor, shard] : root["weight_map"].items()) {
    if (!shard.is_string()) {
      throw InputError({index, 0, 0},
                       "'weight_map' entry '" + QuoteInput(tensor) + "' must name a shard file beside the index");
    }
    CheckShard(index, tensor, shard.get_ref<const std::string&>());
    map.entries.emplace_back(tensor, shard.get_ref<const std::string&>());
  }
  const Json* total =
      root.contains("metadata") && root["metadata"].is_object() && root["metadata"].contains("total_size")
          ? &root["metadata"]["total_size"]
          : nullptr;
  if (total != nullptr && total->is_number_unsigned()) map.total_size = total->get<uint64_t>();
}

// The tensors the index puts in each shard, by shard, each list by tensor: the entries' order.
std::vector<std::pair<std::string_view, std::vector<std::string_view>>> ByShard(const std::string& index,
                                                                                const WeightMap& map) {
  std::vector<std::pair<std::string_view, std::vector<std::string_view>>> shards;
  std::unordered_map<std::string_view, size_t> slot;
  for (const auto& [tensor, shard] : map.entries) {
    auto [it, fresh] = slot.try_emplace(shard, shards.size());
    if (fresh) {
      CheckShard(index, tensor, shard);
      shards.emplace_back(shard, std::vector<std::string_view>{});
    }
    shards[it->second].second.push_back(tensor);
  }
  std::sort(shards.begin(), shards.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return shards;
}

// model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {tensor: shard}}.
void ReadIndex(const std::string& index, CheckpointInfo& info, std::vector<std::string>& notes) {
  const std::string text = ReadFileText(index);
  WeightMap map;
  Json root;
  if (!ScanIndex(text, map)) {
    map = WeightMap{};
    ReadIndexTree(index, text, root, map);
  }
  const auto shards = ByShard(index, map);
  info.tensors.reserve(map.entries.size());
  const fs::path dir = fs::path(index).parent_path();
  // An index fetched without its shards (config and index only) describes weights that are not
  // here: say so and go on with the config. Some shards but not all is a broken download.
  size_t present = 0;
  std::error_code ec;
  for (const auto& entry : shards) present += fs::exists(dir / entry.first, ec) ? 1U : 0U;
  if (present == 0 && !shards.empty()) {
    notes.push_back(index + " names " + std::to_string(shards.size()) +
                    " shards and none is present; the checkpoint was not read");
    return;
  }
  std::vector<std::string> paths;
  paths.reserve(shards.size());
  for (const auto& entry : shards) paths.push_back((dir / entry.first).string());
  ForEachHeader(paths, [&](size_t i, SafetensorsHeader&& h) {
    const auto& [shard, tensors] = shards[i];
    // Both lists are sorted by name: one walk finds the first tensor the shard lacks.
    auto held = h.tensors.begin();
    for (std::string_view t : tensors) {
      while (held != h.tensors.end() && held->name < t) ++held;
      if (held != h.tensors.end() && held->name == t) continue;
      std::string what = "'weight_map' puts '";
      what.append(t).append("' in ").append(shard).append(", which does not hold it");
      throw InputError({index, 0, 0}, what);
    }
    AddFile(info, paths[i], std::move(h));
  });
  if (info.files.empty()) return;
  if (map.total_size && *map.total_size != info.bytes) {
    notes.push_back(index + ": metadata.total_size is " + FormatGrouped(*map.total_size) +
                    " bytes, the shards' headers describe " + FormatGrouped(info.bytes));
  }
}

}  // namespace

CheckpointInfo ReadSafetensors(const std::string& path, std::vector<std::string>& notes) {
  CheckpointInfo info{.format = "safetensors"};
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    if (fs::exists(index, ec)) {
      ReadIndex(index.string(), info, notes);
      return info;
    }
    std::vector<std::string> files;
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    ForEachHeader(files, [&](size_t i, SafetensorsHeader&& h) { AddFile(info, files[i], std::move(h)); });
  } else if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    ReadIndex(path, info, notes);
  } else {
    AddFile(info, path, ReadSafetensorsFile(path));
  }
  return info;
}

}  // namespace tally
