#include "config/hardware.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "config/load_config.h"
#include "config/presets.h"
#include "config/yaml_reader.h"
#include "util/parse.h"
#include "util/spellcheck.h"
#include "util/text.h"

namespace tally {
namespace {

// The dtypes a file may key peaks, efficiencies and measured rates by, in the order errors list them.
constexpr GemmDType kPeakOrder[] = {GemmDType::kFp64, GemmDType::kFp32, GemmDType::kTf32, GemmDType::kFp16,
                                    GemmDType::kBf16, GemmDType::kFp8,  GemmDType::kInt8};

std::vector<std::string> PeakKeys() {
  std::vector<std::string> keys;
  for (GemmDType d : kPeakOrder) keys.emplace_back(Name(d));
  return keys;
}

// A finite rate such as 989.5e12, at least 1 per second (times are divided by it), or 0 where
// `zero` allows it: "none" for a peak or a link.
enum class Zero { kAllowed, kRejected };
double ReadRate(const YAML::Node& node, const std::string& file, const std::string& what, Zero zero) {
  const std::optional<double> read = ReadDouble(node.IsScalar() ? node.Scalar() : "");
  const double v = read.value_or(-1);
  if (!read || (v < 1 && !(v == 0 && zero == Zero::kAllowed))) {
    throw InputError(LocOf(node, file), "'" + what + "' must be " +
                                            (zero == Zero::kAllowed ? "0 or a number >= 1" : "a number >= 1") +
                                            " such as 989.5e12, got " + Describe(node));
  }
  return v;
}

}  // namespace

std::optional<double> HardwareSpec::Peak(GemmDType dtype) const {
  auto it = peak_flops.find(dtype);
  if (it == peak_flops.end()) return std::nullopt;
  return it->second;
}

const char* NvlsName(NvlsArch arch) {
  switch (arch) {
    case NvlsArch::kHopper:
      return "hopper";
    case NvlsArch::kBlackwell:
      return "blackwell";
    case NvlsArch::kNone:
      break;
  }
  return "";
}

double HardwareSpec::IntraNodeCollectiveBandwidth() const {
  const double link = intra_node_bandwidth > 0 ? intra_node_bandwidth : interconnect_bandwidth;
  return link * (intra_node_collective_share > 0 ? intra_node_collective_share : 1);
}

HardwareSpec LoadHardwareText(const std::string& file, const std::string& text) {
  YAML::Node root = ParseYaml(file, text);
  if (root.IsNull()) throw InputError({file, 1, 1}, "the hardware file is empty");
  ConfigMap m(root, file, "hardware",
              {"name",
               "aliases",
               "description",
               "kind",
               "memory_bytes",
               "memory_bandwidth",
               "interconnect_bandwidth",
               "peak_flops",
               "achieved_flops",
               "sources",
               "intra_node_bandwidth",
               "inter_node_bandwidth",
               "board_power_w",
               "gemm_efficiency",
               "host_bandwidth",
               "field_sources",
               "attention_efficiency",
               "decode_bandwidth_efficiency",
               "intra_node_collective_share",
               "nvls",
               "gpus_per_node"});
  HardwareSpec h;
  h.source = file;
  h.name = m.String("name", std::filesystem::path(file).stem().string());
  if (m.Has("aliases")) {
    const YAML::Node& list = m.Get("aliases");
    if (!list.IsSequence()) throw InputError(m.Loc("aliases"), "'aliases' must be a list of names");
    for (const YAML::Node& a : list) {
      if (!a.IsScalar() || a.Scalar().empty())
        throw InputError(LocOf(a, file), "an alias must be a name, got " + Describe(a));
      h.aliases.push_back(Lower(a.Scalar()));
    }
  }
  h.description = m.String("description", "");
  h.kind = std::vector<std::string>{"gpu", "tpu", "cpu"}[m.Choice("kind", {"gpu", "tpu", "cpu"}, 0)];
  h.memory_bytes = m.PositiveInt("memory_bytes");
  h.memory_bandwidth = ReadRate(m.Get("memory_bandwidth"), file, "memory_bandwidth", Zero::kRejected);
  h.interconnect_bandwidth = m.Has("interconnect_bandwidth") ? ReadRate(m.Get("interconnect_bandwidth"), file,
                                                                        "interconnect_bandwidth", Zero::kAllowed)
                                                             : 0;
  for (auto [key, into] : {std::pair<const char*, double*>{"intra_node_bandwidth", &h.intra_node_bandwidth},
                           {"inter_node_bandwidth", &h.inter_node_bandwidth},
                           {"board_power_w", &h.board_power_w},
                           {"host_bandwidth", &h.host_bandwidth}}) {
    if (m.Has(key)) *into = ReadRate(m.Get(key), file, key, Zero::kAllowed);
  }
  // A fraction of a peak: a ratio in (0, 1].
  const auto ratio_of = [](const YAML::Node& node, const SourceLoc& at, const std::string& what) {
    const std::string ratio = node.IsScalar() ? node.Scalar() : "";
    double v = -1;
    auto [ptr, ec] = std::from_chars(ratio.data(), ratio.data() + ratio.size(), v);
    if (ratio.empty() || ec != std::errc() || ptr != ratio.data() + ratio.size() || !(v > 0 && v <= 1))
      throw InputError(at, what + " must be a ratio in (0, 1] such as 0.8, got " + Describe(node));
    return v;
  };
  if (m.Has("gemm_efficiency")) {
    ConfigMap eff(m.Get("gemm_efficiency"), file, "gemm_efficiency", PeakKeys());
    for (GemmDType d : kPeakOrder) {
      const std::string k = Name(d);
      if (eff.Has(k)) h.gemm_efficiency[d] = ratio_of(eff.Get(k), eff.Loc(k), "'" + k + "' in 'gemm_efficiency'");
    }
  }
  if (m.Has("attention_efficiency")) {
    h.attention_efficiency =
        ratio_of(m.Get("attention_efficiency"), m.Loc("attention_efficiency"), "'attention_efficiency'");
  }
  for (auto [key, into] :
       {std::pair<const char*, double*>{"decode_bandwidth_efficiency", &h.decode_bandwidth_efficiency},
        {"intra_node_collective_share", &h.intra_node_collective_share}}) {
    if (m.Has(key)) *into = ratio_of(m.Get(key), m.Loc(key), std::string("'") + key + "'");
  }
  if (m.Has("gpus_per_node")) h.gpus_per_node = m.PositiveInt("gpus_per_node");
  if (m.Has("nvls")) {
    h.nvls = m.Choice("nvls", {"hopper", "blackwell"}, 0) == 0 ? NvlsArch::kHopper : NvlsArch::kBlackwell;
  }
  ConfigMap peaks(m.Get("peak_flops"), file, "peak_flops", PeakKeys());
  for (GemmDType d : kPeakOrder) {
    if (peaks.Has(Name(d))) h.peak_flops[d] = ReadRate(peaks.Get(Name(d)), file, Name(d), Zero::kAllowed);
  }
  if (m.Has("achieved_flops")) {
    ConfigMap achieved(m.Get("achieved_flops"), file, "achieved_flops", PeakKeys());
    for (GemmDType d : kPeakOrder) {
      const std::string k = Name(d);
      if (!achieved.Has(k)) continue;
      h.achieved_flops[d] = ReadRate(achieved.Get(k), file, k, Zero::kRejected);
      // A measured rate above the dense peak would be an MFU above 1.
      const auto peak = h.peak_flops.find(d);
      if (peak != h.peak_flops.end() && h.achieved_flops[d] > peak->second) {
        throw InputError(achieved.Loc(k), "'" + k + "' in 'achieved_flops' (" + achieved.Get(k).Scalar() +
                                              ") is above its 'peak_flops' (" + peaks.Get(k).Scalar() + ")");
      }
    }
  }
  if (m.Has("sources")) {
    const YAML::Node& list = m.Get("sources");
    if (!list.IsSequence()) throw InputError(m.Loc("sources"), "'sources' must be a list of strings");
    for (const YAML::Node& s : list) h.sources.push_back(s.IsScalar() ? s.Scalar() : "");
  }
  if (m.Has("field_sources")) {
    // A key may name a dtype the file leaves out: its source says why (no published peak).
    ConfigMap fields(m.Get("field_sources"), file, "field_sources", HardwareFieldKeys());
    for (const std::string& k : HardwareFieldKeys()) {
      if (!fields.Has(k)) continue;
      const YAML::Node& node = fields.Get(k);
      if (!node.IsScalar() || node.Scalar().empty()) {
        throw InputError(fields.Loc(k), "'" + k + "' in 'field_sources' must be a text, got " + Describe(node));
      }
      h.field_sources[k] = node.Scalar();
    }
  }
  return h;
}

// The catalog, read once: names and aliases are looked up on every run.
const std::vector<HardwareSpec>& Catalog() {
  static const std::vector<HardwareSpec> catalog = [] {
    std::vector<HardwareSpec> specs;
    for (const EmbeddedPreset& p : EmbeddedHardware()) specs.push_back(LoadHardwareText(p.path, p.text));
    return specs;
  }();
  return catalog;
}

std::vector<std::string> HardwareFieldKeys() {
  std::vector<std::string> keys = {"memory_bytes",
                                   "memory_bandwidth",
                                   "interconnect_bandwidth",
                                   "intra_node_bandwidth",
                                   "inter_node_bandwidth",
                                   "board_power_w",
                                   "host_bandwidth",
                                   "attention_efficiency",
                                   "decode_bandwidth_efficiency",
                                   "intra_node_collective_share",
                                   "nvls",
                                   "gpus_per_node"};
  for (const char* group : {"peak_flops.", "gemm_efficiency.", "achieved_flops."}) {
    for (const std::string& d : PeakKeys()) keys.push_back(group + d);
  }
  return keys;
}

std::vector<std::string> HardwareNames() {
  std::vector<std::string> names;
  for (const EmbeddedPreset& p : EmbeddedHardware()) names.emplace_back(p.name);
  return names;
}

std::string FindHardwareName(const std::string& arg) {
  const std::string word = Lower(arg);
  for (const HardwareSpec& h : Catalog()) {
    if (word == Lower(h.name) || std::find(h.aliases.begin(), h.aliases.end(), word) != h.aliases.end()) return h.name;
  }
  return "";
}

std::string HardwareSuggestion(const std::string& arg) {
  const std::string word = Lower(arg);
  if (word.empty()) return "";
  auto found = [](const std::string& name) { return " (did you mean '" + name + "'?)"; };
  std::vector<std::string> prefixed;
  for (const HardwareSpec& h : Catalog()) {
    if (Lower(h.name).rfind(word, 0) == 0) prefixed.push_back(h.name);
  }
  if (prefixed.size() == 1) return found(prefixed[0]);
  // h100-nvl: the family h100 is an alias of h100-sxm.
  const std::string family = FindHardwareName(word.substr(0, word.find('-')));
  if (!family.empty()) return found(family);
  std::vector<std::string> spellings;
  for (const HardwareSpec& h : Catalog()) {
    spellings.push_back(h.name);
    spellings.insert(spellings.end(), h.aliases.begin(), h.aliases.end());
  }
  const std::string close = FindHardwareName(ClosestMatch(word, spellings));
  return close.empty() ? "" : found(close);
}

HardwareSpec ResolveHardware(const std::string& arg) {
  const std::string name = FindHardwareName(arg);
  for (const HardwareSpec& h : Catalog()) {
    if (h.name == name) {
      HardwareSpec entry = h;
      entry.catalog = true;
      return entry;
    }
  }
  std::error_code ec;
  if (arg.find('/') != std::string::npos || std::filesystem::path(arg).has_extension() ||
      std::filesystem::exists(arg, ec)) {
    return LoadHardwareText(arg, ReadFileText(arg));
  }
  throw InputError("--hardware: unknown hardware '" + arg + "'" + HardwareSuggestion(arg) +
                   "; run 'tally hardware' for the catalog, or give a path to a hardware file");
}

}  // namespace tally
