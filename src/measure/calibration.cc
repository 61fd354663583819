#include "measure/calibration.h"

#include <cctype>
#include <cstdio>

namespace tally {
namespace {

// Four significant digits: measurements carry no more, and YAML reads "4.531e+11" as a float.
std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

// "key:" and one "  dtype: value" line each; a key starting with '#' makes the block a comment.
std::string Map(const std::string& key, const std::vector<std::pair<GemmDType, double>>& values,
                const std::string& indent) {
  if (values.empty()) return "";
  const std::string lead = key[0] == '#' ? "#   " : indent + "  ";
  std::string out = indent + key + ":\n";
  for (const auto& [d, v] : values) out += lead + GemmDTypeName(d) + ": " + Number(v) + "\n";
  return out;
}

}  // namespace

std::string Slug(const std::string& name) {
  std::string out;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "device" : out;
}

std::string CalibrationYaml(const Calibration& c) {
  // `achieved_flops` is what `tally time --hardware THIS_FILE` uses as the throughput; the probe and
  // the MFU go into comments and `sources`.
  std::string mfu;
  for (const auto& [d, v] : c.mfu) mfu += (mfu.empty() ? "" : ", ") + std::string(GemmDTypeName(d)) + " " + Number(v);
  std::string out =
      "# Written by `tally measure --calibrate`: this machine as measured, in the schema of\n"
      "# configs/hardware. peak_flops is the computed peak (ISA x cores x clock on a CPU, the\n"
      "# datasheet on a GPU, or --peak).\n";
  if (!c.mfu.empty()) {
    out += "# Measured MFU: " + mfu + "; tally time MODEL --hardware THIS_FILE uses achieved_flops.\n";
  }
  out += "name: " + c.name + "\n";
  out += "description: " + Quoted(c.description) + "\n";
  out += "kind: " + c.kind + "\n";
  out += "memory_bytes: " + std::to_string(c.memory_bytes) + "\n";
  out += "memory_bandwidth: " + Number(c.memory_bandwidth) + "   # measured\n";
  out += "interconnect_bandwidth: 0\n";
  out += Map("peak_flops", c.peak_flops, "");
  out += Map("# probed_flops (FMA loop)", c.probed_flops, "");
  out += Map("achieved_flops", c.achieved_flops, "");
  std::string measured = "measured by " + c.source;
  if (c.clock_hz > 0) measured += "; clock " + Number(c.clock_hz) + " Hz";
  if (c.kind == "cpu") measured += "; " + std::to_string(c.threads) + " threads";
  for (const auto& [d, v] : c.achieved_flops)
    measured += "; " + std::string(GemmDTypeName(d)) + " achieved " + Number(v);
  if (!mfu.empty()) measured += "; MFU " + mfu;
  return out + "sources:\n  - " + Quoted(measured) + "\n";
}

}  // namespace tally
