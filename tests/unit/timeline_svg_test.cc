// The step timeline's SVG chart, read back through a small XML parser: structure, axis values and
// stacking against hand derivations.
#include "report/timeline_svg.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tally {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // the character data directly inside, entities as written
};

// The elements of a well-formed document in document order, or `error` saying why it is not:
// tags balance, attribute values are quoted, '&' starts a known entity, and one root holds all.
struct Xml {
  std::vector<Element> elements;
  std::string error;
};

bool EntitiesOk(std::string_view text) {
  if (text.find('<') != std::string_view::npos) return false;
  for (size_t at = text.find('&'); at != std::string_view::npos; at = text.find('&', at + 1)) {
    const std::string_view rest = text.substr(at);
    bool known = false;
    for (std::string_view e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) known = known || rest.starts_with(e);
    if (!known) return false;
  }
  return true;
}

// Reads `name="value"` pairs up to the end of a start tag; false on anything else.
bool ReadAttrs(std::string_view tag, Element& e) {
  size_t i = 0;
  while (i < tag.size()) {
    if (tag[i] == ' ' || tag[i] == '\n') {
      ++i;
      continue;
    }
    const size_t eq = tag.find("=\"", i), close = eq == std::string_view::npos ? eq : tag.find('"', eq + 2);
    if (close == std::string_view::npos) return false;
    const std::string key(tag.substr(i, eq - i)), value(tag.substr(eq + 2, close - eq - 2));
    if (key.empty() || key.find(' ') != std::string::npos || !EntitiesOk(value) || e.attrs.count(key)) return false;
    e.attrs[key] = value;
    i = close + 1;
  }
  return true;
}

Xml Parse(std::string_view doc) {
  Xml xml;
  std::vector<size_t> open;
  size_t roots = 0, i = doc.starts_with("<?xml ") ? doc.find("?>") + 2 : 0;
  while (i < doc.size() && xml.error.empty()) {
    if (doc[i] != '<') {
      const size_t end = std::min(doc.find('<', i), doc.size());
      const std::string_view text = doc.substr(i, end - i);
      if (open.empty() && text.find_first_not_of(" \n") != std::string_view::npos) xml.error = "text outside the root";
      if (!EntitiesOk(text)) xml.error = "bad character data: " + std::string(text);
      if (!open.empty()) xml.elements[open.back()].text += text;
      i = end;
      continue;
    }
    const size_t end = doc.find('>', i);  // the document escapes '>' in attribute values too
    if (end == std::string_view::npos) return {{}, "unterminated tag"};
    std::string_view tag = doc.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with('/')) {
      if (open.empty() || xml.elements[open.back()].name != tag.substr(1))
        xml.error = "unbalanced </" + std::string(tag);
      if (!open.empty()) open.pop_back();
      continue;
    }
    const bool empty = tag.ends_with('/');
    if (empty) tag.remove_suffix(1);
    Element e;
    e.name = std::string(tag.substr(0, tag.find(' ')));
    if (e.name.find_first_of("<&\"") != std::string::npos ||
        !ReadAttrs(tag.substr(std::min(tag.find(' '), tag.size())), e)) {
      xml.error = "bad tag <" + std::string(tag) + ">";
    }
    if (open.empty() && ++roots > 1) xml.error = "a second root <" + e.name + ">";
    if (!empty) open.push_back(xml.elements.size());
    xml.elements.push_back(std::move(e));
  }
  if (xml.error.empty() && !open.empty()) xml.error = "<" + xml.elements[open.back()].name + "> never closed";
  if (xml.error.empty() && (xml.elements.empty() || xml.elements[0].name != "svg")) xml.error = "the root is not <svg>";
  return xml;
}

std::string Unescape(std::string text) {
  static const std::pair<std::string, std::string> kEntities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}};
  for (const auto& [entity, c] : kEntities) {
    for (size_t at = text.find(entity); at != std::string::npos; at = text.find(entity, at + 1)) {
      text.replace(at, entity.size(), c);
    }
  }
  return text;
}

std::vector<const Element*> Find(const Xml& xml, const std::string& name, const std::string& cls = "") {
  std::vector<const Element*> found;
  for (const Element& e : xml.elements) {
    const auto it = e.attrs.find("class");
    if (e.name == name && (cls.empty() || (it != e.attrs.end() && it->second == cls))) found.push_back(&e);
  }
  return found;
}

std::vector<std::string> Texts(const std::vector<const Element*>& elements) {
  std::vector<std::string> texts;
  for (const Element* e : elements) texts.push_back(Unescape(e->text));
  return texts;
}

struct Point {
  double x, y;
};

std::vector<Point> Points(const Element& polygon) {
  std::vector<Point> points;
  const std::string& text = polygon.attrs.at("points");
  for (size_t i = 0; i < text.size();) {
    size_t comma = text.find(',', i), space = std::min(text.find(' ', comma), text.size());
    points.push_back({std::stod(text.substr(i, comma - i)), std::stod(text.substr(comma + 1, space - comma - 1))});
    i = space + 1;
  }
  return points;
}

double MinY(const Element& polygon) {
  double y = 1e9;
  for (const Point& p : Points(polygon)) y = std::min(y, p.y);
  return y;
}

double MaxY(const Element& polygon) {
  double y = -1e9;
  for (const Point& p : Points(polygon)) y = std::max(y, p.y);
  return y;
}

// The y of the gridline labelled `label` (its text sits 4 px below the line, which the line's own
// y1 confirms: the label and line are found by value, not by a layout constant).
double GridY(const Xml& xml, const std::string& label) {
  const std::vector<const Element*> ticks = Find(xml, "text", "y-tick");
  for (const Element* t : ticks) {
    if (Unescape(t->text) == label) return std::stod(t->attrs.at("y")) - 4;
  }
  FAIL("no gridline labelled " << label);
  return 0;
}

double TickX(const Xml& xml, const std::string& label) {
  for (const Element* t : Find(xml, "text", "x-tick")) {
    if (t->text == label) return std::stod(t->attrs.at("x"));
  }
  FAIL("no x tick labelled " << label);
  return 0;
}

StepEvent Event(StepPhase phase, std::string node, uint64_t weights, uint64_t grads, uint64_t optimizer,
                uint64_t activations, uint64_t temporaries) {
  return {phase, std::move(node), {{weights, grads, optimizer, activations, temporaries}}};
}

// Six events over the four phases; the peak is 3.5 GiB at the first backward event.
StepTimeline SixEvents(const std::string& peak_node) {
  constexpr uint64_t kHalf = kGiB / 2, kQuarter = kGiB / 4;
  StepTimeline t;
  t.events = {
      Event(StepPhase::kForward, "embed", kGiB, 0, 0, 0, kQuarter),                // 1.25 GiB
      Event(StepPhase::kForward, "blocks.0.mlp.up", kGiB, 0, 0, kHalf, kQuarter),  // 1.75 GiB
      Event(StepPhase::kLoss, "loss", kGiB, 0, 0, kGiB, kHalf),                    // 2.5 GiB
      Event(StepPhase::kBackward, peak_node, kGiB, kHalf, 0, kGiB, kGiB),          // 3.5 GiB
      Event(StepPhase::kBackward, "embed", kGiB, kGiB, 0, 0, kHalf),               // 2.5 GiB
      Event(StepPhase::kOptimizer, "optimizer", kGiB, kGiB, kGiB, 0, kQuarter),    // 3.25 GiB
  };
  t.peak = 3 * kGiB + kHalf;
  t.peak_phase = StepPhase::kBackward;
  t.peak_at = peak_node;
  t.at_peak = t.events[3].live;
  return t;
}

TEST_CASE("step timeline names: phases, categories and the total") {
  CHECK(std::string(StepPhaseName(StepPhase::kForward)) == "forward");
  CHECK(std::string(StepPhaseName(StepPhase::kLoss)) == "loss");
  CHECK(std::string(StepPhaseName(StepPhase::kBackward)) == "backward");
  CHECK(std::string(StepPhaseName(StepPhase::kOptimizer)) == "optimizer");
  CHECK(std::string(LiveCategoryName(LiveCategory::kWeights)) == "weights");
  CHECK(std::string(LiveCategoryName(LiveCategory::kGradients)) == "gradients");
  CHECK(std::string(LiveCategoryName(LiveCategory::kOptimizer)) == "optimizer_states");
  CHECK(std::string(LiveCategoryName(LiveCategory::kActivations)) == "activations");
  CHECK(std::string(LiveCategoryName(LiveCategory::kTemporaries)) == "temporaries");
  CHECK(LiveBytes{{1, 2, 3, 4, 5}}.Total() == 15);
  CHECK_THROWS(LiveBytes{{UINT64_MAX, 1, 0, 0, 0}}.Total());  // an overflow is an error, not a wrap
}

TEST_CASE("timeline svg: six events by hand") {
  const std::string node = "blocks.0.mlp<\"up\"&'down'>";
  const std::string svg = TimelineSvg(SixEvents(node), "gpt <tiny> & \"friends\"");
  const Xml xml = Parse(svg);
  REQUIRE_MESSAGE(xml.error.empty(), xml.error);
  CHECK(xml.elements[0].attrs.at("viewBox") == "0 0 960 480");
  CHECK(xml.elements[0].attrs.at("font-family") == "sans-serif");
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(Texts(Find(xml, "text", "title")) == std::vector<std::string>{"gpt <tiny> & \"friends\""});

  // Peak 3.5 GiB: a fifth of it is 716.8 MiB, rounded up to a power of two 1 GiB; 4 steps reach it.
  CHECK(Texts(Find(xml, "text", "y-tick")) == std::vector<std::string>{"0 B", "1 GiB", "2 GiB", "3 GiB", "4 GiB"});
  // Six events: a tick every event, 0 to 6 (event boundaries).
  CHECK(Texts(Find(xml, "text", "x-tick")) == std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6"});
  CHECK(Texts(Find(xml, "text", "phase")) == std::vector<std::string>{"forward", "loss", "backward", "optimizer"});

  // Five shapes, bottom-up in enum order, five different fills.
  const std::vector<const Element*> shapes = Find(xml, "polygon");
  REQUIRE(shapes.size() == 5);
  std::set<std::string> fills;
  for (size_t k = 0; k < 5; ++k) {
    CHECK(shapes[k]->attrs.at("class") == LiveCategoryName(static_cast<LiveCategory>(k)));
    fills.insert(shapes[k]->attrs.at("fill"));
  }
  CHECK(fills.size() == 5);

  // Tops of the stack by hand: weights are 1 GiB throughout; with gradients at most 2 GiB (events
  // 4 and 5); with optimizer states 3 GiB (event 5); with activations still 3 GiB (event 3 has
  // 1 + 0.5 + 0 + 1 = 2.5); with temporaries the peak, 3.5 GiB, 7/8 of the way from 0 to 4 GiB.
  const double y0 = GridY(xml, "0 B"), y4 = GridY(xml, "4 GiB");
  const double y_peak = y0 + 0.875 * (y4 - y0);
  CHECK(MaxY(*shapes[0]) == y0);
  CHECK(MinY(*shapes[0]) == GridY(xml, "1 GiB"));
  CHECK(MinY(*shapes[1]) == GridY(xml, "2 GiB"));
  CHECK(MinY(*shapes[2]) == GridY(xml, "3 GiB"));
  CHECK(MinY(*shapes[3]) == GridY(xml, "3 GiB"));
  CHECK(std::abs(MinY(*shapes[4]) - y_peak) <= 0.1);

  // The marker on top of event 3, halfway between ticks 3 and 4; the label names it, escaped.
  const std::vector<const Element*> marker = Find(xml, "circle", "peak-marker");
  REQUIRE(marker.size() == 1);
  CHECK(std::stod(marker[0]->attrs.at("cy")) == MinY(*shapes[4]));
  CHECK(std::abs(std::stod(marker[0]->attrs.at("cx")) - (TickX(xml, "3") + TickX(xml, "4")) / 2) <= 0.1);
  const std::vector<const Element*> label = Find(xml, "text", "peak");
  REQUIRE(label.size() == 1);
  CHECK(label[0]->text == "peak 3.50 GiB · backward · blocks.0.mlp&lt;&quot;up&quot;&amp;&apos;down&apos;&gt;");

  // The legend: top of the stack first, each with its bytes at the peak (event 3).
  CHECK(Texts(Find(xml, "text", "legend")) ==
        std::vector<std::string>{"temporaries", "activations", "optimizer_states", "gradients", "weights"});
  for (const char* bytes : {">1.00 GiB<", ">512.00 MiB<", ">0 B<"}) CHECK(svg.find(bytes) != std::string::npos);
}

TEST_CASE("timeline svg: coordinates have at most one decimal") {
  const std::string svg = TimelineSvg(SixEvents("x"), "t");
  const Xml xml = Parse(svg);
  REQUIRE(xml.error.empty());
  const std::set<std::string> coordinates = {"x",  "y", "x1",    "y1",     "x2",     "y2", "cx",
                                             "cy", "r", "width", "height", "points", "d"};
  for (const Element& e : xml.elements) {
    for (const auto& attr : e.attrs) {
      // Named copies, not a structured binding: clang 14 cannot capture one in CHECK_MESSAGE.
      const std::string& key = attr.first;
      const std::string& value = attr.second;
      if (!coordinates.count(key)) continue;
      for (size_t dot = value.find('.'); dot != std::string::npos; dot = value.find('.', dot + 1)) {
        CHECK_MESSAGE(!(dot + 2 < value.size() && std::isdigit(value[dot + 2])), e.name << " " << key << "=" << value);
      }
    }
  }
}

TEST_CASE("timeline svg: a control character in a name stays well-formed") {
  const std::string svg = TimelineSvg(SixEvents("bad\x01name"), "t\x1b[2J");
  const Xml xml = Parse(svg);
  REQUIRE(xml.error.empty());
  CHECK(svg.find('\x01') == std::string::npos);
  CHECK(svg.find('\x1b') == std::string::npos);
  CHECK(Texts(Find(xml, "text", "title")) == std::vector<std::string>{"t\\x1B[2J"});
}

TEST_CASE("timeline svg: 10,000 events keep a one-event peak") {
  // Weights 1 GiB and a saw of activations, 0 to 99 MiB, so that no two neighbours match; one
  // event, 7,777, holds 4 GiB (1 + 1 + 2). A fifth of 4 GiB rounds up to 1 GiB: top 4 GiB, the
  // peak exactly on the top gridline. Columns that kept their first event would have lost it.
  StepTimeline t;
  for (size_t i = 0; i < 10'000; ++i) {
    const StepPhase phase = i < 4000   ? StepPhase::kForward
                            : i < 4100 ? StepPhase::kLoss
                            : i < 9990 ? StepPhase::kBackward
                                       : StepPhase::kOptimizer;
    t.events.push_back(Event(phase, "n" + std::to_string(i), kGiB, 0, 0, (i % 100) * kMiB, 0));
  }
  t.events[7777].live = LiveBytes{{kGiB, kGiB, 0, 0, 2 * kGiB}};
  t.peak = 4 * kGiB;
  t.peak_phase = StepPhase::kBackward;
  t.peak_at = "n7777";
  t.at_peak = t.events[7777].live;
  const std::string svg = TimelineSvg(t, "long");
  const Xml xml = Parse(svg);
  REQUIRE_MESSAGE(xml.error.empty(), xml.error);

  const std::vector<const Element*> shapes = Find(xml, "polygon");
  REQUIRE(shapes.size() == 5);
  for (const Element* shape : shapes) {
    std::set<double> xs;
    for (const Point& p : Points(*shape)) xs.insert(p.x);
    CHECK(xs.size() <= 1000);
  }
  CHECK(Texts(Find(xml, "text", "y-tick")) == std::vector<std::string>{"0 B", "1 GiB", "2 GiB", "3 GiB", "4 GiB"});
  // 10,000 events: 8 ticks of 1,000 fall short, 2,000 is the first step reaching it.
  CHECK(Texts(Find(xml, "text", "x-tick")) == std::vector<std::string>{"0", "2000", "4000", "6000", "8000", "10000"});
  CHECK(MinY(*shapes[4]) == GridY(xml, "4 GiB"));
  CHECK(MinY(*shapes[1]) == GridY(xml, "2 GiB"));  // weights and gradients of event 7,777
  // Elsewhere the top is 1 GiB + 99 MiB at most: the stack below temporaries never passes 2 GiB.
  CHECK(MinY(*shapes[3]) == GridY(xml, "2 GiB"));

  const std::vector<const Element*> marker = Find(xml, "circle", "peak-marker");
  REQUIRE(marker.size() == 1);
  CHECK(std::stod(marker[0]->attrs.at("cy")) == GridY(xml, "4 GiB"));
  const double x0 = TickX(xml, "0"), x1 = TickX(xml, "10000");
  CHECK(std::abs(std::stod(marker[0]->attrs.at("cx")) - (x0 + 0.77775 * (x1 - x0))) <= 0.1);
  CHECK(Texts(Find(xml, "text", "peak")) == std::vector<std::string>{"peak 4.00 GiB · backward · n7777"});
  CHECK(Texts(Find(xml, "text", "phase")) == std::vector<std::string>{"forward", "loss", "backward", "optimizer"});
}

TEST_CASE("timeline svg: no events") {
  const std::string svg = TimelineSvg(StepTimeline{}, "empty");
  const Xml xml = Parse(svg);
  REQUIRE_MESSAGE(xml.error.empty(), xml.error);
  CHECK(Find(xml, "polygon").empty());
  CHECK(Texts(Find(xml, "text")) == std::vector<std::string>{"empty", "no events"});
}

TEST_CASE("timeline svg: the parser of these tests refuses broken documents") {
  CHECK(Parse("<svg><g></svg>").error.size() > 0);
  CHECK(Parse("<svg></svg><svg></svg>").error.size() > 0);
  CHECK(Parse("<svg><text>a & b</text></svg>").error.size() > 0);
  CHECK(Parse("<svg x=\"<\"></svg>").error.size() > 0);
  CHECK(Parse("<g></g>").error.size() > 0);
  CHECK(Parse("<svg><text>a &amp; b</text></svg>").error.empty());
}

}  // namespace
}  // namespace tally
