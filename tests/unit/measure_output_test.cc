// measure's parsing, conversions and outputs: flags' values, bf16/fp16 rounding, the results in
// JSON and CSV, the table's units, the roofline SVG and the calibration file.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/hardware.h"
#include "measure/calibration.h"
#include "measure/float_convert.h"
#include "measure/gemm_shape.h"
#include "measure/measure_report.h"
#include "measure/roofline_svg.h"
#include "report/format.h"
#include "util/error.h"

namespace tally {
namespace {

TEST_CASE("measure output: shapes and dtypes from the command line") {
  CHECK(ParseGemmShape("2048x768x3072", "shapes") == GemmShape{2048, 768, 3072});
  CHECK(ParseGemmShape("2kx1kx1", "shapes") == GemmShape{2000, 1000, 1});
  CHECK_THROWS_WITH_AS(ParseGemmShape("2048x768", "shapes"),
                       "tally: error: --shapes: '2048x768' is not a shape MxNxK such as 2048x768x3072", InputError);
  CHECK_THROWS_AS(ParseGemmShape("0x1x1", "shapes"), InputError);
  CHECK(ParseGemmDType("bfloat16") == GemmDType::kBf16);
  CHECK(ParseGemmDType("double") == GemmDType::kFp64);
  CHECK(ParseGemmDType("BF16") == GemmDType::kBf16);  // as --precision and --kv-dtype read it
  CHECK(ParseGemmDType("FP8") == GemmDType::kFp8);
  // int8 is a catalog peak (hardware files key it), not a type measure times.
  CHECK_THROWS_WITH_AS(ParseGemmDType("int8"),
                       "tally: error: --dtype: unknown dtype 'int8'; use one of fp32, fp64, bf16, fp16, tf32, fp8",
                       InputError);
  CHECK(*ResolveHardware("h100").Peak(GemmDType::kInt8) == 1978.9e12);  // H100 whitepaper, dense int8 TOPS
  CHECK_THROWS_WITH_AS(ParseGemmDType("fp23"),
                       "tally: error: --dtype: unknown dtype 'fp23' (did you mean 'fp32'?); use one of fp32, fp64, "
                       "bf16, fp16, tf32, fp8",
                       InputError);
  CHECK(GemmShape{2048, 2048, 2048}.Flops() == 17'179'869'184);  // 2 · 2048³
}

TEST_CASE("measure output: a shape may name its layout") {
  const GemmShape nt = ParseGemmShape("2048x768x3072:NT", "shapes");
  CHECK(nt == GemmShape{2048, 768, 3072, false, true});
  CHECK(nt.Text() == "2048x768x3072:NT");
  CHECK(nt.Layout() == "NT");
  CHECK(ParseGemmShape("8x8x8:TT", "shapes").Layout() == "TT");
  CHECK(ParseGemmShape("8x8x8:NN", "shapes").Text() == "8x8x8");  // NN is the default and unmarked
  CHECK_THROWS_WITH_AS(ParseGemmShape("8x8x8:NX", "shapes"),
                       "tally: error: --shapes: '8x8x8:NX': unknown layout 'NX' (did you mean 'NN'?); use NN, NT, TN "
                       "or TT (op(A) then op(B); T reads the stored operand transposed)",
                       InputError);
  CHECK_THROWS_AS(ParseGemmShape("8x8x8:", "shapes"), InputError);
  CHECK_THROWS_AS(ParseGemmShape("8x8:NT", "shapes"), InputError);
}

TEST_CASE("measure output: fp8 e4m3 follows the OCP spec, rounding to nearest even and saturating") {
  // OCP 8-bit Floating Point Specification (OFP8) v1.0, Table 1: E4M3 has bias 7, max normal
  // S.1111.110 = 448, min normal 2^-6, min subnormal 2^-9, NaN S.1111.111, no infinities.
  CHECK(FloatToFp8E4M3(1.0f) == 0x38);
  CHECK(FloatToFp8E4M3(-1.0f) == 0xB8);
  CHECK(FloatToFp8E4M3(448.0f) == 0x7E);
  CHECK(FloatToFp8E4M3(0.015625f) == 0x08);      // 2^-6, the smallest normal
  CHECK(FloatToFp8E4M3(0.001953125f) == 0x01);   // 2^-9, the smallest subnormal
  CHECK(FloatToFp8E4M3(0.0009765625f) == 0x00);  // 2^-10: a tie between 0 and 2^-9, to even
  CHECK(FloatToFp8E4M3(1.0625f) == 0x38);        // 1 + 1/16: a tie between 1 and 1.125, to even
  CHECK(FloatToFp8E4M3(1.1875f) == 0x3A);        // 1 + 3/16: a tie, to even (up, 1.25)
  CHECK(FloatToFp8E4M3(1e6f) == 0x7E);           // saturates, as satfinite casts do
  CHECK(FloatToFp8E4M3(-1e6f) == 0xFE);
  CHECK(FloatToFp8E4M3(NAN) == 0x7F);
  CHECK(Fp8E4M3ToFloat(0x7E) == 448.0f);
  CHECK(Fp8E4M3ToFloat(0x01) == 0.001953125f);
  CHECK(std::isnan(Fp8E4M3ToFloat(0xFF)));
  CHECK(Fp8E4M3ToFloat(0x78) == 256.0f);  // 1.000 x 2^(15-7): exponent 15 is finite in E4M3
  for (int b = 0; b < 256; ++b) {         // every finite code survives the round trip
    CAPTURE(b);
    if ((b & 0x7F) == 0x7F) continue;
    CHECK(FloatToFp8E4M3(Fp8E4M3ToFloat(static_cast<uint8_t>(b))) == b);
  }
}

TEST_CASE("measure output: bf16 and fp16 round to nearest even") {
  CHECK(FloatToBf16(1.0f) == 0x3F80);
  CHECK(Bf16ToFloat(0x3F80) == 1.0f);
  CHECK(FloatToBf16(1.00390625f) == 0x3F80);  // 1 + 2^-8: a tie, to even
  CHECK(FloatToBf16(1.01171875f) == 0x3F82);  // 1 + 3·2^-8: a tie, to even (up)
  CHECK(FloatToHalf(1.0f) == 0x3C00);
  CHECK(FloatToHalf(0.0f) == 0x0000);
  CHECK(FloatToHalf(-0.0f) == 0x8000);
  CHECK(FloatToHalf(-2.0f) == 0xC000);
  CHECK(FloatToHalf(65504.0f) == 0x7BFF);
  CHECK(FloatToHalf(1e6f) == 0x7C00);
  CHECK(FloatToHalf(1.0f + 1.0f / 2048) == 0x3C00);  // a tie, to even
  CHECK(FloatToHalf(5.9604645e-8f) == 0x0001);       // the smallest subnormal, 2^-24
  CHECK(FloatToHalf(6.1035156e-5f) == 0x0400);       // the smallest normal, 2^-14
  for (uint32_t h = 0; h < 0x10000; ++h) {           // every finite half survives the round trip
    if ((h & 0x7C00) == 0x7C00) continue;
    CAPTURE(h);
    CHECK(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))) == h);
  }
}

GemmResult Result(uint64_t n, GemmDType d, int threads, double median_s) {
  GemmResult r;
  r.shape = {n, n, n};
  r.dtype = d;
  r.device = "cpu";
  r.threads = threads;
  r.bench.seconds = Summarize({median_s, median_s, median_s});
  r.bench.reps = 3;
  r.flop_per_s = static_cast<double>(r.shape.Flops()) / median_s;
  r.peak_flop_per_s = 1e11;
  r.probed_flop_per_s = 8e10;
  return r;
}

TEST_CASE("measure output: results in JSON and CSV") {
  Report report;
  report.Group("measure", "Measurement");
  report.Set("measure.device", "device", std::string("cpu"), Unit::kText);
  // 2·1024³ = 2,147,483,648 FLOP in 1/32 s = 68.7 GFLOP/s: MFU 0.687 against 100 GFLOP/s.
  AddResults(report, {Result(1024, GemmDType::kFp32, 2, 1.0 / 32), Result(256, GemmDType::kFp64, 1, 1.0 / 1024)}, 2e11);
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(report));
  const nlohmann::json& results = doc["measure"]["results"];
  REQUIRE(results.size() == 2);
  for (const char* key : {"m", "n", "k", "layout", "dtype", "device", "threads", "seconds", "flop_per_s", "mfu"}) {
    CAPTURE(key);
    CHECK(results[0].contains(key));
  }
  CHECK(results[0]["m"] == 1024);
  CHECK(results[0]["layout"] == "NN");
  CHECK(results[0]["dtype"] == "fp32");
  CHECK(results[0]["threads"] == 2);
  CHECK(results[0]["seconds"] == 0.03125);
  CHECK(results[0]["flop_per_s"] == 68719476736.0);
  CHECK(results[0]["mfu"].get<double>() == doctest::Approx(0.68719476736));
  CHECK(doc["measure"]["best_mfu"].get<double>() == doctest::Approx(0.68719476736));
  CHECK(doc["measure"]["peak_flop_per_s"] == 2e11);
  CHECK(doc["measure"]["best"]["shape"] == "1024x1024x1024");

  const std::string csv = FormatDelimited(report, ',');
  CHECK(csv.substr(0, csv.find('\n')) ==
        "m,n,k,layout,dtype,device,threads,seconds,flop_per_s,mfu,seconds_min,seconds_max,cv,reps,iterations_per_rep,"
        "peak_flop_per_s,probed_peak_flop_per_s,mfu_probed,arithmetic_intensity,padded_to,run_flop_per_s,skip_reason");
  CHECK(csv.find("\n1024,1024,1024,NN,fp32,cpu,2,0.03125,68719476736,") != std::string::npos);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);  // header + one row per result
}

TEST_CASE("measure output: the table shows each figure in its unit") {
  Report report;
  report.Group("measure", "Measurement");
  report.Set("measure.cpu.clock_hz", "clock", 3.54e9, Unit::kHertz);
  report.Set("measure.budget_s", "budget", 0.2, Unit::kSecond);
  AddResults(report, {Result(1024, GemmDType::kFp32, 2, 1.0 / 32)}, 2e11);
  const std::string table = FormatTable(report, UnitSystem::kIec);
  // Labels pad to 44 columns and values right-align in 14: 3.54e9 Hz, 0.2 s, 2e11 FLOP/s.
  CHECK(table.find("  clock" + std::string(37, ' ') + "      3.54 GHz\n") != std::string::npos);
  CHECK(table.find("  budget" + std::string(36, ' ') + "        200 ms\n") != std::string::npos);
  CHECK(table.find("  peak, fp32 (whole device)" + std::string(17, ' ') + "200.00 GFLOP/s\n") != std::string::npos);
  // The results: each column as wide as its widest cell, two spaces apart; 1/32 s = 31.2 ms.
  CHECK(table.find("  Results\n        m      n      k  layout  dtype  threads   median") != std::string::npos);
  CHECK(table.find("\n    1,024  1,024  1,024  NN      fp32         2  31.2 ms") != std::string::npos);
}

TEST_CASE("measure output: a GPU's table names its peak and has no probe column — layouts are shown") {
  Report report;
  report.Group("measure", "Measurement");
  GemmResult r = Result(1024, GemmDType::kBf16, 1, 1.0 / 32);
  r.device = "cuda";
  r.shape.trans_b = true;
  r.peak_basis = "NVIDIA H100 SXM5 datasheet";
  AddResults(report, {r}, 989.5e12);
  const std::string table = FormatTable(report, UnitSystem::kIec);
  // 2·1024³ FLOP in 1/32 s = 68.7 GFLOP/s of a 100 GFLOP/s peak: 0.687, the peak and its basis named.
  const size_t mfu = table.find("\n  best MFU, of 100.00 GFLOP/s bf16 peak: NVIDIA H100 SXM5 datasheet ");
  REQUIRE(mfu != std::string::npos);
  CHECK(table.substr(mfu + 1, table.find('\n', mfu + 1) - mfu - 1).ends_with(" 0.687"));
  CHECK(table.find("MFU against the FMA probe") == std::string::npos);
  CHECK(table.find("mfu (probe)") == std::string::npos);
  CHECK(table.find("\n    1,024  1,024  1,024  NT      bf16         1  31.2 ms") != std::string::npos);
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(report));
  CHECK(doc["measure"]["results"][0]["layout"] == "NT");
  CHECK(doc["measure"]["best"]["shape"] == "1024x1024x1024:NT");
}

TEST_CASE("measure output: an MFU above 1 is left out and the peak called wrong") {
  Report report;
  report.Group("measure", "Measurement");
  // 2·1024³ FLOP in 1/64 s = 137.4 GFLOP/s against a peak of 100 GFLOP/s: the peak is wrong.
  GemmResult fast = Result(1024, GemmDType::kFp32, 2, 1.0 / 64);
  fast.peak_basis = "32 FLOP/cycle x 2 cores x 1.56 GHz (TSC rate (the nominal clock))";
  GemmResult slow = Result(1024, GemmDType::kFp64, 2, 1.0 / 16);  // 34.4 GFLOP/s: MFU 0.344
  slow.peak_basis = fast.peak_basis;
  AddResults(report, {fast, slow}, 1e11);
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(report));
  CHECK_FALSE(doc["measure"].contains("best_mfu"));
  CHECK(doc["measure"]["results"][0]["mfu"].is_null());
  CHECK(doc["measure"]["results"][1]["mfu"].get<double>() == doctest::Approx(0.34359738368));
  REQUIRE(report.notes.size() == 1);
  CHECK(report.notes[0] ==
        "fp32 1024x1024x1024 on 2 threads ran at 137.44 GFLOP/s, above the peak of 100.00 GFLOP/s (32 FLOP/cycle x 2 "
        "cores x 1.56 GHz (TSC rate (the nominal clock))): that peak is wrong (the clock it assumes is below the one "
        "the cores ran at, or the FLOP per cycle undercount this core), so its MFU is left out rather than shown "
        "above 1");
  CHECK(OverPeakNote("x", 2, 1, "--peak").find("(the --peak given is too low)") != std::string::npos);
}

TEST_CASE("measure output: no MFU against a peak the FMA probe beat, or against no peak") {
  Report report;
  report.Group("measure", "Measurement");
  // 68.7 GFLOP/s against a computed 100 GFLOP/s is 0.687, under 1; but the probe reached more than
  // the peak (PeakCheck refuted it), so the clock or the table is wrong and no MFU is printed.
  GemmResult refuted = Result(1024, GemmDType::kFp32, 2, 1.0 / 32);
  refuted.peak_refuted = true;
  CHECK_FALSE(refuted.MfuShown());
  GemmResult unknown = Result(1024, GemmDType::kFp64, 2, 1.0 / 32);
  unknown.peak_flop_per_s = 0;  // no clock within bounds: no computed peak
  CHECK_FALSE(unknown.MfuShown());
  AddResults(report, {refuted, unknown}, 1e11);
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(report));
  CHECK_FALSE(doc["measure"].contains("best_mfu"));
  CHECK(doc["measure"]["results"][0]["mfu"].is_null());
  CHECK(doc["measure"]["results"][1]["mfu"].is_null());
}

TEST_CASE("measure output: a padded shape says what ran and a refused one why, untimed") {
  Report report;
  report.Group("measure", "Measurement");
  GemmResult padded = Result(1024, GemmDType::kFp8, 1, 1.0 / 32);
  padded.device = "cuda";
  padded.shape = {1000, 1024, 1024};
  padded.run_shape = {1008, 1024, 1024};              // 1000 = 62.5 x 16: up to 63 x 16
  padded.flop_per_s = 2.0 * 1000 * 1024 * 1024 * 32;  // as TimeOne sets it: the asked shape's FLOPs
  GemmResult refused = padded;
  refused.shape = refused.run_shape = {4096, 4096, 4096};
  refused.skip_reason =
      "refused by cuBLASLt: status 15 (not supported) from cublasLtMatmulAlgoGetHeuristic for fp8 4096x4096x4096";
  AddResults(report, {padded, refused}, 1979e12);
  const nlohmann::json doc = nlohmann::json::parse(FormatJson(report));
  const nlohmann::json& rows = doc["measure"]["results"];
  CHECK(rows[0]["padded_to"] == "1008x1024x1024");
  // flop_per_s counts the shape asked, run_flop_per_s the shape run, both over 1/32 s:
  // 2·1000·1024·1024 · 32 = 67,108,864,000 and 2·1008·1024·1024 · 32 = 67,645,734,912.
  CHECK(rows[0]["flop_per_s"] == 67108864000.0);
  CHECK(rows[0]["run_flop_per_s"] == 67645734912.0);
  CHECK(rows[1]["run_flop_per_s"].is_null());
  CHECK(rows[0]["skip_reason"].is_null());
  CHECK(rows[1]["padded_to"].is_null());
  CHECK(rows[1]["skip_reason"] == refused.skip_reason);
  CHECK(rows[1]["seconds"].is_null());
  CHECK(rows[1]["mfu"].is_null());
  CHECK(doc["measure"]["best"]["shape"] == "1000x1024x1024");  // the refused shape is never the best
  REQUIRE(report.notes.size() == 2);
  CHECK(report.notes[0] ==
        "1 shape was padded with zeros to multiples of 16, as cuBLASLt's fp8 kernels require (e.g. 1000x1024x1024 "
        "run as 1008x1024x1024); FLOP/s and MFU count the asked shape's FLOPs, run_flop_per_s the padded shape's");
  CHECK(report.notes[1] ==
        "1 GEMM was not timed (skip_reason in the results), e.g. 4096x4096x4096 fp8: " + refused.skip_reason);
}

TEST_CASE("measure output: the roofline SVG") {
  RooflineChart chart;
  chart.title = "Roofline: <test> & co";
  chart.bandwidth_bytes_per_s = 5e10;
  chart.roofs = {{"fp32 computed peak", 4.5e11}};
  chart.points = {{170.7, 2e11, "fp32, 2 threads", "2048x2048x2048"}, {21.3, 1.1e11, "fp64, 1 thread", "128"}};
  const std::string svg = RooflineSvg(chart);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("Roofline: &lt;test&gt; &amp; co") != std::string::npos);
  CHECK(svg.find("<polyline") != std::string::npos);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  CHECK(circles == 4);  // two points and two legend entries
  CHECK(svg.find(">fp32 computed peak</text>") != std::string::npos);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(RooflineSvg(chart) == svg);  // deterministic
}

TEST_CASE("measure output: the calibration file") {
  Calibration c;
  c.name = "cpu";
  c.description = "AMD EPYC, 2 cores at 3.54 GHz (measured)";
  c.kind = "cpu";
  c.memory_bytes = 25769803776;
  c.memory_bandwidth = 4.01e10;
  c.clock_hz = 3.54e9;
  c.threads = 2;
  c.peak_flops = {{GemmDType::kFp32, 4.531e11}};
  c.probed_flops = {{GemmDType::kFp32, 4.545e11}};
  c.achieved_flops = {{GemmDType::kFp32, 2.09e11}};
  c.mfu = {{GemmDType::kFp32, 0.4612}};
  c.source = "tally measure";
  CHECK(CalibrationYaml(c) ==
        "# Written by `tally measure --calibrate`: this machine as measured, in the schema of\n"
        "# configs/hardware. peak_flops is the computed peak (ISA x cores x clock on a CPU, the\n"
        "# datasheet on a GPU, or --peak).\n"
        "# Measured MFU: fp32 0.4612; tally time MODEL --hardware THIS_FILE uses achieved_flops.\n"
        "name: cpu\n"
        "description: \"AMD EPYC, 2 cores at 3.54 GHz (measured)\"\n"
        "kind: cpu\n"
        "memory_bytes: 25769803776\n"
        "memory_bandwidth: 4.01e+10   # measured\n"
        "interconnect_bandwidth: 0\n"
        "peak_flops:\n"
        "  fp32: 4.531e+11\n"
        "# probed_flops (FMA loop):\n"
        "#   fp32: 4.545e+11\n"
        "achieved_flops:\n"
        "  fp32: 2.09e+11\n"
        "sources:\n"
        "  - \"measured by tally measure; clock 3.54e+09 Hz; 2 threads; fp32 achieved 2.09e+11; MFU fp32 0.4612\"\n");
  CHECK(Slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3");
  // The file reads back as hardware, with the measured rate as its achieved throughput.
  const HardwareSpec h = LoadHardwareText("calibrated.yaml", CalibrationYaml(c));
  CHECK(h.Peak(GemmDType::kFp32) == 4.531e11);
  CHECK(h.achieved_flops.at(GemmDType::kFp32) == 2.09e11);
}

}  // namespace
}  // namespace tally
