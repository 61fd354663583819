#include "measure/roofline_svg.h"

#include <algorithm>
#include <cmath>

#include "util/units.h"

namespace tally {
namespace {

constexpr double kWidth = 760, kHeight = 480;
constexpr double kLeft = 80, kRight = 200, kTop = 40, kBottom = 60;  // margins; the legend sits right
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string Num(double v) { return FormatFixed(v, 1); }

// Decades spanned on one axis.
struct Axis {
  int lo = 0, hi = 1;  // log10 bounds
  double Fraction(double v) const { return (std::log10(v) - lo) / (hi - lo); }
};

Axis Span(double lo, double hi) {
  Axis a{static_cast<int>(std::floor(std::log10(lo))), static_cast<int>(std::ceil(std::log10(hi)))};
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  return a;
}

// "0.1", "1", "10", "1k", "1 G": a decade's tick label with an SI prefix.
std::string Decade(int exponent, const char* unit) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  if (exponent < 0) return FormatFixed(std::pow(10.0, exponent), -exponent) + unit;
  const int prefix = std::min(exponent / 3, 6);
  const std::string suffix = std::string(kPrefixes[prefix]) + unit;
  return FormatFixed(std::pow(10.0, exponent - 3 * prefix), 0) + (suffix.empty() ? "" : " " + suffix);
}

struct Frame {
  Axis x, y;
  double X(double v) const { return kLeft + x.Fraction(v) * (kWidth - kLeft - kRight); }
  double Y(double v) const { return kHeight - kBottom - y.Fraction(v) * (kHeight - kTop - kBottom); }
};

Frame Fit(const RooflineChart& c) {
  std::vector<double> xs, ys;
  for (const RooflinePoint& p : c.points) {
    if (p.intensity > 0 && p.flop_per_s > 0) xs.push_back(p.intensity), ys.push_back(p.flop_per_s);
  }
  for (const RooflineRoof& r : c.roofs) {
    if (!(r.flop_per_s > 0)) continue;
    ys.push_back(r.flop_per_s);
    if (c.bandwidth_bytes_per_s > 0) xs.push_back(r.flop_per_s / c.bandwidth_bytes_per_s);  // the ridge
  }
  if (xs.empty()) xs = {1, 100};
  if (ys.empty()) ys = {1e9, 1e12};
  const auto [x_lo, x_hi] = std::minmax_element(xs.begin(), xs.end());
  const auto [y_lo, y_hi] = std::minmax_element(ys.begin(), ys.end());
  return {Span(*x_lo / 2, *x_hi * 2), Span(*y_lo / 2, *y_hi * 1.5)};
}

void Grid(const Frame& f, std::string& out) {
  for (int e = f.x.lo; e <= f.x.hi; ++e) {
    const double x = f.X(std::pow(10.0, e));
    out += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(kTop) + "\" x2=\"" + Num(x) + "\" y2=\"" + Num(kHeight - kBottom) +
           "\" stroke=\"#ddd\"/>\n";
    out += "<text x=\"" + Num(x) + "\" y=\"" + Num(kHeight - kBottom + 18) + "\" text-anchor=\"middle\">" +
           Decade(e, "") + "</text>\n";
  }
  for (int e = f.y.lo; e <= f.y.hi; ++e) {
    const double y = f.Y(std::pow(10.0, e));
    out += "<line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(kWidth - kRight) + "\" y2=\"" + Num(y) +
           "\" stroke=\"#ddd\"/>\n";
    out += "<text x=\"" + Num(kLeft - 6) + "\" y=\"" + Num(y + 4) + "\" text-anchor=\"end\">" + Decade(e, "FLOP/s") +
           "</text>\n";
  }
  out += "<text x=\"" + Num((kLeft + kWidth - kRight) / 2) + "\" y=\"" + Num(kHeight - 18) +
         "\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n";
}

// min(peak, bandwidth · intensity) across the chart, and its label at the right end.
void Roof(const Frame& f, const RooflineChart& c, const RooflineRoof& r, size_t i, std::string& out) {
  if (!(r.flop_per_s > 0)) return;
  const double x_min = std::pow(10.0, f.x.lo), x_max = std::pow(10.0, f.x.hi);
  std::string points;
  if (c.bandwidth_bytes_per_s > 0) {
    const double ridge = std::clamp(r.flop_per_s / c.bandwidth_bytes_per_s, x_min, x_max);
    const double start = std::max(c.bandwidth_bytes_per_s * x_min, std::pow(10.0, f.y.lo));
    points = Num(f.X(start / c.bandwidth_bytes_per_s)) + "," + Num(f.Y(start)) + " " + Num(f.X(ridge)) + "," +
             Num(f.Y(std::min(r.flop_per_s, c.bandwidth_bytes_per_s * ridge))) + " ";
  } else {
    points = Num(f.X(x_min)) + "," + Num(f.Y(r.flop_per_s)) + " ";
  }
  points += Num(f.X(x_max)) + "," + Num(f.Y(r.flop_per_s));
  out += "<polyline fill=\"none\" stroke=\"#444\" stroke-width=\"1.5\"" +
         std::string(i % 2 == 1 ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + points + "\"/>\n";
  out += "<text x=\"" + Num(kWidth - kRight + 6) + "\" y=\"" + Num(f.Y(r.flop_per_s) + 4) + "\">" + Escape(r.label) +
         "</text>\n";
}

}  // namespace

std::string RooflineSvg(const RooflineChart& c) {
  const Frame f = Fit(c);
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(kWidth) + "\" height=\"" + Num(kHeight) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + Num(kLeft) + "\" y=\"24\" font-size=\"14\">" + Escape(c.title) + "</text>\n";
  Grid(f, out);
  for (size_t i = 0; i < c.roofs.size(); ++i) Roof(f, c, c.roofs[i], i, out);
  std::vector<std::string> series;
  for (const RooflinePoint& p : c.points) {
    auto it = std::find(series.begin(), series.end(), p.series);
    if (it == series.end()) it = series.insert(series.end(), p.series);
    const char* colour = kColours[static_cast<size_t>(it - series.begin()) % 6];
    if (!(p.intensity > 0) || !(p.flop_per_s > 0)) continue;
    out += "<circle cx=\"" + Num(f.X(p.intensity)) + "\" cy=\"" + Num(f.Y(p.flop_per_s)) + "\" r=\"4\" fill=\"" +
           colour + "\"><title>" + Escape(p.label) + "</title></circle>\n";
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const double y = kHeight - kBottom - 16.0 * static_cast<double>(series.size() - i);
    out += "<circle cx=\"" + Num(kWidth - kRight + 12) + "\" cy=\"" + Num(y) + "\" r=\"4\" fill=\"" + kColours[i % 6] +
           "\"/><text x=\"" + Num(kWidth - kRight + 22) + "\" y=\"" + Num(y + 4) + "\">" + Escape(series[i]) +
           "</text>\n";
  }
  return out + "</svg>\n";
}

}  // namespace tally
