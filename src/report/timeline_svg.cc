#include "report/timeline_svg.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "util/checked_math.h"
#include "util/text.h"
#include "util/units.h"

namespace tally {
namespace {

constexpr double kWidth = 960, kHeight = 480;
// The plot's edges: the title and the phase labels above it, the y labels left, the legend right.
constexpr double kPlotLeft = 72, kPlotRight = 760, kPlotTop = 64, kPlotBottom = 432;
// Past this many events, each pixel column of the plot draws one event: the column's highest.
constexpr size_t kMaxEvents = 4000;
// Okabe & Ito (2008), "Color Universal Design": told apart under the common colour-vision deficiencies.
constexpr const char* kFills[kLiveCategories] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9"};
constexpr double kCharWidth = 6.2;  // an average character at 11px sans-serif, to keep labels apart
constexpr double kLabelGap = 8;

// Text as XML character data or an attribute value. Control characters are made visible first
// (most are not allowed in XML 1.0 at all), and invalid UTF-8 becomes \xHH.
std::string Escape(std::string_view text) {
  std::string out;
  for (char c : EscapeControl(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Coordinates are kept in tenths of a pixel: at most one decimal in the document, and points that
// print the same compare equal.
int64_t Tenths(double v) { return std::llround(v * 10); }

std::string Num(int64_t tenths) {
  const std::string sign = tenths < 0 ? "-" : "";
  const int64_t a = tenths < 0 ? -tenths : tenths;
  return sign + std::to_string(a / 10) + (a % 10 == 0 ? "" : "." + std::to_string(a % 10));
}

std::string Num(double v) { return Num(Tenths(v)); }

// "768 MiB", "1.5 GiB": the house IEC format without the zeros a gridline's round value leaves.
std::string ShortBytes(uint64_t bytes) {
  std::string text = FormatBytes(bytes, UnitSystem::kIec);
  const size_t dot = text.find('.'), space = text.find(' ');
  if (dot == std::string::npos || space == std::string::npos) return text;
  size_t end = space;
  while (text[end - 1] == '0') --end;
  if (text[end - 1] == '.') --end;
  return text.erase(end, space - end);
}

// Gridlines every `step` bytes, a power of two: the smallest that reaches the peak in 5 steps. Then
// the half step fell short (peak > 2.5 steps), so there are 3 to 5 steps: 4 to 6 lines with 0.
struct YAxis {
  uint64_t step = 1;
  uint64_t n_steps = 1;
};

YAxis NiceAxis(uint64_t peak) {
  const uint64_t step = std::bit_ceil(std::max<uint64_t>(1, CeilDiv(peak, 5)));
  return {step, std::max<uint64_t>(1, CeilDiv(peak, step))};
}

struct Frame {
  size_t n_events = 1;
  double top_bytes = 1;  // the y axis's top gridline
  // The left edge of event `e`; event e spans [X(e), X(e + 1)).
  double X(double e) const { return kPlotLeft + e * (kPlotRight - kPlotLeft) / static_cast<double>(n_events); }
  double Y(double bytes) const { return kPlotBottom - bytes / top_bytes * (kPlotBottom - kPlotTop); }
};

// One drawn step of the chart: events [begin, end), shown by `event`, the one of most live bytes.
struct Sample {
  size_t begin = 0, end = 0, event = 0;
};

std::vector<Sample> Samples(const std::vector<uint64_t>& totals) {
  const size_t n = totals.size();
  const size_t columns = n > kMaxEvents ? static_cast<size_t>(kPlotRight - kPlotLeft) : n;
  std::vector<Sample> samples;
  for (size_t c = 0; c < columns; ++c) {
    Sample s{c * n / columns, (c + 1) * n / columns, c * n / columns};
    for (size_t i = s.begin + 1; i < s.end; ++i) {
      if (totals[i] > totals[s.event]) s.event = i;
    }
    samples.push_back(s);
  }
  return samples;
}

// A polygon's vertices. A repeated point, or the middle of three going the same way along one
// line, adds nothing and is dropped: runs of equal events cost no vertices.
class Outline {
 public:
  void Add(double x, double y) {
    const Point p{Tenths(x), Tenths(y)};
    if (!points_.empty() && points_.back().x == p.x && points_.back().y == p.y) return;
    if (points_.size() >= 2) {
      const Point &a = points_[points_.size() - 2], &b = points_.back();
      const bool along_x = a.y == b.y && b.y == p.y && (b.x - a.x) * (p.x - b.x) > 0;
      const bool along_y = a.x == b.x && b.x == p.x && (b.y - a.y) * (p.y - b.y) > 0;
      if (along_x || along_y) {
        points_.back() = p;
        return;
      }
    }
    points_.push_back(p);
  }

  std::string Text() const {
    std::string text;
    for (const Point& p : points_) text += (text.empty() ? "" : " ") + Num(p.x) + "," + Num(p.y);
    return text;
  }

 private:
  struct Point {
    int64_t x, y;
  };
  std::vector<Point> points_;
};

// One polygon per category, on top of the ones before it: along its top left to right, back along
// the top of the category below.
void Areas(const Frame& f, const std::vector<StepEvent>& events, const std::vector<Sample>& samples, std::string& out) {
  std::vector<uint64_t> below(samples.size(), 0);
  for (size_t k = 0; k < kLiveCategories; ++k) {
    std::vector<uint64_t> above = below;
    Outline outline;
    for (size_t s = 0; s < samples.size(); ++s) {
      above[s] += events[samples[s].event].live.bytes[k];  // no overflow: the total was checked
      const double y = f.Y(static_cast<double>(above[s]));
      outline.Add(f.X(static_cast<double>(samples[s].begin)), y);
      outline.Add(f.X(static_cast<double>(samples[s].end)), y);
    }
    for (size_t s = samples.size(); s-- > 0;) {
      const double y = f.Y(static_cast<double>(below[s]));
      outline.Add(f.X(static_cast<double>(samples[s].end)), y);
      outline.Add(f.X(static_cast<double>(samples[s].begin)), y);
    }
    const char* name = LiveCategoryName(static_cast<LiveCategory>(k));
    out += "<polygon class=\"" + std::string(name) + "\" fill=\"" + kFills[k] + "\" points=\"" + outline.Text() +
           "\"><title>" + name + "</title></polygon>\n";
    below = std::move(above);
  }
}

void YGrid(const Frame& f, const YAxis& axis, std::string& out) {
  for (uint64_t k = 0; k <= axis.n_steps; ++k) {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(k, axis.step, &bytes)) break;  // a top line past 2^64 - 1 B goes unlabelled
    const std::string y = Num(f.Y(static_cast<double>(bytes)));
    out += "<line x1=\"" + Num(kPlotLeft) + "\" y1=\"" + y + "\" x2=\"" + Num(kPlotRight) + "\" y2=\"" + y +
           "\" stroke=\"#000\" stroke-opacity=\"0.15\"/>\n";
    out += "<text class=\"y-tick\" x=\"" + Num(kPlotLeft - 6) + "\" y=\"" + Num(f.Y(static_cast<double>(bytes)) + 4) +
           "\" text-anchor=\"end\">" + ShortBytes(bytes) + "</text>\n";
  }
}

// Event-index ticks every 1, 2 or 5 × 10^k events: at most 9 of them, 0 included.
uint64_t TickStep(uint64_t n_events) {
  static constexpr uint64_t kMantissas[] = {1, 2, 5};
  for (uint64_t decade = 1;; decade *= 10) {
    for (uint64_t m : kMantissas) {
      if (n_events <= 8 * decade * m) return decade * m;
    }
  }
}

void XAxis(const Frame& f, std::string& out) {
  const uint64_t step = TickStep(f.n_events);
  for (uint64_t e = 0; e <= f.n_events; e += step) {
    const std::string x = Num(f.X(static_cast<double>(e)));
    out += "<line x1=\"" + x + "\" y1=\"" + Num(kPlotBottom) + "\" x2=\"" + x + "\" y2=\"" + Num(kPlotBottom + 4) +
           "\" stroke=\"#000\"/>\n<text class=\"x-tick\" x=\"" + x + "\" y=\"" + Num(kPlotBottom + 16) +
           "\" text-anchor=\"middle\">" + std::to_string(e) + "</text>\n";
  }
  out += "<path d=\"M" + Num(kPlotLeft) + "," + Num(kPlotTop) + " V" + Num(kPlotBottom) + " H" + Num(kPlotRight) +
         "\" fill=\"none\" stroke=\"#000\"/>\n";
  out += "<text x=\"" + Num((kPlotLeft + kPlotRight) / 2) + "\" y=\"" + Num(kHeight - 12) +
         "\" text-anchor=\"middle\">event</text>\n";
}

struct Run {
  StepPhase phase;
  size_t begin = 0, end = 0;
};

std::vector<Run> PhaseRuns(const std::vector<StepEvent>& events) {
  std::vector<Run> runs;
  for (size_t i = 0; i < events.size(); ++i) {
    if (runs.empty() || runs.back().phase != events[i].phase) runs.push_back({events[i].phase, i, i});
    runs.back().end = i + 1;
  }
  return runs;
}

// Every other phase shaded, behind the areas.
void PhaseBands(const Frame& f, const std::vector<Run>& runs, std::string& out) {
  for (size_t r = 0; r < runs.size(); r += 2) {
    const double x0 = f.X(static_cast<double>(runs[r].begin)), x1 = f.X(static_cast<double>(runs[r].end));
    out += "<rect x=\"" + Num(x0) + "\" y=\"" + Num(kPlotTop) + "\" width=\"" + Num(x1 - x0) + "\" height=\"" +
           Num(kPlotBottom - kPlotTop) + "\" fill=\"#f0f0f0\"/>\n";
  }
}

double TextWidth(const char* text) { return kCharWidth * static_cast<double>(std::strlen(text)); }

// Moves label centres apart, left to right and then right to left, so that labels of `widths`
// neither overlap nor leave the plot: a one-event phase of a long step still gets its name.
void Spread(std::vector<double>& centres, const std::vector<double>& widths) {
  for (size_t i = 0; i < centres.size(); ++i) {
    const double lo = i == 0 ? kPlotLeft + widths[i] / 2 : centres[i - 1] + (widths[i - 1] + widths[i]) / 2 + kLabelGap;
    centres[i] = std::max(centres[i], lo);
  }
  for (size_t i = centres.size(); i-- > 0;) {
    const double hi = i + 1 == centres.size() ? kPlotRight - widths[i] / 2
                                              : centres[i + 1] - (widths[i] + widths[i + 1]) / 2 - kLabelGap;
    centres[i] = std::min(centres[i], hi);
  }
}

// A line between phases, over the areas, and each phase's name above the plot.
void PhaseLabels(const Frame& f, const std::vector<Run>& runs, std::string& out) {
  struct Label {
    const char* name;
    double x0, x1;
  };
  std::vector<Label> labels;
  double needed = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const Label l{StepPhaseName(runs[r].phase), f.X(static_cast<double>(runs[r].begin)),
                  f.X(static_cast<double>(runs[r].end))};
    if (r > 0) {
      out += "<line x1=\"" + Num(l.x0) + "\" y1=\"" + Num(kPlotTop - 4) + "\" x2=\"" + Num(l.x0) + "\" y2=\"" +
             Num(kPlotBottom) + "\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>\n";
    }
    labels.push_back(l);
    needed += TextWidth(l.name) + kLabelGap;
  }
  // More phases than names fit side by side (a step has four): name those wide enough for it.
  if (needed > kPlotRight - kPlotLeft) {
    std::erase_if(labels, [](const Label& l) { return TextWidth(l.name) > l.x1 - l.x0; });
  }
  std::vector<double> centres, widths;
  for (const Label& l : labels) centres.push_back((l.x0 + l.x1) / 2), widths.push_back(TextWidth(l.name));
  Spread(centres, widths);
  for (size_t i = 0; i < labels.size(); ++i) {
    out += "<text class=\"phase\" x=\"" + Num(centres[i]) + "\" y=\"" + Num(kPlotTop - 8) +
           "\" text-anchor=\"middle\">" + labels[i].name + "</text>\n";
  }
}

// The categories top of the stack first, as drawn, each with its bytes at the peak.
void Legend(const LiveBytes& at_peak, std::string& out) {
  const double x = kPlotRight + 20;
  out += "<text x=\"" + Num(x) + "\" y=\"" + Num(kPlotTop + 4) + "\" font-weight=\"bold\">at the peak</text>\n";
  for (size_t i = 0; i < kLiveCategories; ++i) {
    const size_t k = kLiveCategories - 1 - i;
    const double y = kPlotTop + 16 + 36 * static_cast<double>(i);
    out += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"12\" height=\"12\" fill=\"" + kFills[k] + "\"/>\n";
    out += "<text class=\"legend\" x=\"" + Num(x + 18) + "\" y=\"" + Num(y + 10) + "\">" +
           LiveCategoryName(static_cast<LiveCategory>(k)) + "</text>\n";
    out += "<text x=\"" + Num(x + 18) + "\" y=\"" + Num(y + 24) + "\" fill=\"#555\">" +
           FormatBytes(at_peak.bytes[k], UnitSystem::kIec) + "</text>\n";
  }
}

// The event of most live bytes; among ties, the one the timeline names as its peak, else the first.
size_t PeakEvent(const StepTimeline& t, const std::vector<uint64_t>& totals) {
  const uint64_t most = *std::max_element(totals.begin(), totals.end());
  size_t first = totals.size();
  for (size_t i = 0; i < totals.size(); ++i) {
    if (totals[i] != most) continue;
    if (t.events[i].node == t.peak_at && t.events[i].phase == t.peak_phase) return i;
    first = std::min(first, i);
  }
  return first;
}

// A ring on the top of the peak event and its label beside it, on a white halo over the areas.
void Peak(const Frame& f, const StepEvent& e, size_t index, uint64_t bytes, std::string& out) {
  const double x = f.X(static_cast<double>(index) + 0.5), y = f.Y(static_cast<double>(bytes));
  out += "<circle class=\"peak-marker\" cx=\"" + Num(x) + "\" cy=\"" + Num(y) +
         "\" r=\"4\" fill=\"white\" stroke=\"#000\" stroke-width=\"1.5\"/>\n";
  const bool left_half = x < (kPlotLeft + kPlotRight) / 2;
  out += "<text class=\"peak\" x=\"" + Num(left_half ? x + 8 : x - 8) + "\" y=\"" +
         Num(std::max(y - 8, kPlotTop + 14)) + "\" text-anchor=\"" + (left_half ? "start" : "end") +
         "\" font-weight=\"bold\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">peak " +
         FormatBytes(bytes, UnitSystem::kIec) + " · " + StepPhaseName(e.phase) + " · " + Escape(e.node) + "</text>\n";
}

std::string Head(const std::string& title) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         Num(kWidth) + "\" height=\"" + Num(kHeight) + "\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(kHeight) +
         "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
         "<text class=\"title\" x=\"" + Num(kPlotLeft) + "\" y=\"26\" font-size=\"15\" font-weight=\"bold\">" +
         Escape(title) + "</text>\n";
}

}  // namespace

std::string TimelineSvg(const StepTimeline& timeline, const std::string& title) {
  std::string out = Head(title);
  const std::vector<StepEvent>& events = timeline.events;
  if (events.empty()) {
    out += "<text x=\"" + Num(kWidth / 2) + "\" y=\"" + Num(kHeight / 2) +
           "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#555\">no events</text>\n";
    return out + "</svg>\n";
  }
  std::vector<uint64_t> totals;
  for (const StepEvent& e : events) totals.push_back(e.live.Total());
  const size_t peak = PeakEvent(timeline, totals);
  const YAxis axis = NiceAxis(totals[peak]);
  const Frame f{events.size(), static_cast<double>(axis.step) * static_cast<double>(axis.n_steps)};
  const std::vector<Run> runs = PhaseRuns(events);
  PhaseBands(f, runs, out);
  Areas(f, events, Samples(totals), out);
  YGrid(f, axis, out);
  PhaseLabels(f, runs, out);
  XAxis(f, out);
  Legend(events[peak].live, out);
  Peak(f, events[peak], peak, totals[peak], out);
  return out + "</svg>\n";
}

}  // namespace tally
