#include "report/report.h"

#include <cmath>
#include <stdexcept>

namespace tally {
namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

ReportNode* Child(ReportNode& node, const std::string& key) {
  for (ReportNode& c : node.children) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

void CollectLeaves(const ReportNode& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const ReportNode& c : node.children) {
    std::string key = prefix.empty() ? c.key : prefix + "." + c.key;
    if (c.is_group) {
      CollectLeaves(c, key, out);
    } else {
      out.push_back(key);
    }
  }
}

// The one gate every reported number passes: inputs are validated where they enter, so an
// infinite or NaN value here is tally's own bug (exit 4), never something to print as inf or null.
void CheckFinite(const std::string& key, const Value& v) {
  const double* d = std::get_if<double>(&v);
  if (d != nullptr && !std::isfinite(*d)) {
    throw std::logic_error("report: '" + key + "' is " + (std::isnan(*d) ? "not a number" : "infinite"));
  }
}

}  // namespace

ReportNode& Report::Group(const std::string& path, const std::string& label) {
  ReportNode* node = &root_;
  for (const std::string& part : Split(path)) {
    ReportNode* next = Child(*node, part);
    if (next == nullptr) {
      node->children.push_back(ReportNode{.key = part});
      next = &node->children.back();
    }
    if (!next->is_group) throw std::logic_error("report: " + path + " is a leaf");
    node = next;
  }
  if (!label.empty()) node->label = label;
  return *node;
}

void Report::Set(const std::string& path, const std::string& label, Value value, Unit unit,
                 const std::string& explain) {
  size_t dot = path.rfind('.');
  ReportNode& parent = dot == std::string::npos ? root_ : Group(path.substr(0, dot));
  std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
  if (Child(parent, key) != nullptr) throw std::logic_error("report: " + path + " set twice");
  CheckFinite(path, value);
  parent.children.push_back(ReportNode{
      .key = key, .label = label, .is_group = false, .value = std::move(value), .unit = unit, .explain = explain});
}

ReportNode& ReportNode::AddGroup(const std::string& child_key, const std::string& child_label) {
  children.push_back(ReportNode{.key = child_key, .label = child_label});
  return children.back();
}

void ReportNode::AddLeaf(const std::string& child_key, const std::string& child_label, Value v, Unit u) {
  CheckFinite(child_key, v);
  children.push_back(
      ReportNode{.key = child_key, .label = child_label, .is_group = false, .value = std::move(v), .unit = u});
}

const ReportNode* ReportNode::Child(const std::string& child_key) const {
  for (const ReportNode& c : children) {
    if (c.key == child_key) return &c;
  }
  return nullptr;
}

namespace {

const ReportNode* FindUnder(const ReportNode& node, std::string_view path) {
  if (path.empty()) return &node;
  for (const ReportNode& c : node.children) {
    if (path.substr(0, c.key.size()) != c.key) continue;
    std::string_view rest = path.substr(c.key.size());
    if (rest.empty()) return &c;
    if (rest[0] != '.') continue;
    if (const ReportNode* found = FindUnder(c, rest.substr(1))) return found;
  }
  return nullptr;
}

}  // namespace

const ReportNode* Report::Find(const std::string& path) const { return FindUnder(root_, path); }

std::vector<std::string> Report::LeafKeys() const {
  std::vector<std::string> keys;
  CollectLeaves(root_, "", keys);
  return keys;
}

}  // namespace tally
