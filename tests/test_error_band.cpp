// Error bands (hw/error_band.hpp): the quantile rule, the chip reader's `calibration.bands`, and
// the band a run carries (api run_band: the kind's band, `all` in its stead, a mixed step's union).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/error_band.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_error_band {

namespace {

// The test chip with a calibration record whose bands are `bands` (YAML lines under `bands:`).
std::string calibrated_chip(const std::string& bands) {
  return std::string(test_configs::kSg2262) +
         "calibration:\n"
         "  g5sim: \"0.1.0\"\n  date: \"2026-12-02T00:00:00Z\"\n  base: \"sg2262\"\n  measured: \"m.csv\"\n"
         "  rows: [\"a\", \"b\"]\n  fitted:\n    - \"ddr.efficiency 0.9 -> 0.9 in [0.05, 1]\"\n"
         "  mape_before_pct: 10.00\n  mape_after_pct: 5.00\n  leave_one_out_mape_pct: 6.00\n"
         "  leave_one_model_out_mape_pct: 9.00\n"
         "  bands:\n    coverage: 0.8\n    basis: \"leave-one-out\"\n" +
         bands;
}

std::string error_of(const std::string& text) {
  try {
    hw::chip_from_yaml(text, "chip.yaml");
  } catch (const hw::ConfigError& e) {
    return e.what();
  }
  return "";
}

g5sim::Result run(const g5sim::Chip& chip, const std::string& mix, const std::string& scope) {
  static const g5sim::Model model = g5sim::Model::from_yaml(test_configs::kDeepSeekV3, "v3");
  g5sim::Request r;
  r.mix = mix;
  r.scope = scope;
  if (scope == "step") r.layers = 1;
  r.tp = r.ep = r.dp = 1;
  return g5sim::simulate(chip, model, r);
}

}  // namespace

TEST_CASE("band quantiles interpolate between sorted ratios", "[band]") {
  // Five ratios: q = 0.1 sits at position 0.4, 0.8 + 0.4 x (0.9 - 0.8) = 0.84; q = 0.9 at 3.6,
  // 1.1 + 0.6 x (1.3 - 1.1) = 1.22; the ends are the extremes.
  const std::vector<double> r{0.8, 0.9, 1.0, 1.1, 1.3};
  CHECK(hw::interpolated_quantile(r, 0.1) == Approx(0.84).epsilon(1e-12));
  CHECK(hw::interpolated_quantile(r, 0.9) == Approx(1.22).epsilon(1e-12));
  CHECK(hw::interpolated_quantile(r, 0.0) == 0.8);
  CHECK(hw::interpolated_quantile(r, 1.0) == 1.3);
  CHECK(hw::interpolated_quantile({2.0}, 0.9) == 2.0);
}

TEST_CASE("calibration.bands is read strictly", "[band][config]") {
  const hw::Chip chip = hw::chip_from_yaml(
      calibrated_chip("    decode: {rows: 8, low: 0.95, high: 1.07}\n    all: {rows: 16, low: 0.8, high: 1.35}\n"),
      "chip.yaml");
  REQUIRE(chip.error_bands);
  CHECK(chip.calibrated);
  CHECK(chip.error_bands->coverage == 0.8);
  CHECK(chip.error_bands->basis == "leave-one-out");
  CHECK(chip.error_bands->band_for(hw::BandKind::decode)->rows == 8);
  CHECK(chip.error_bands->band_for(hw::BandKind::prefill)->kind == hw::BandKind::all);
  // The record's held-out MAPEs (g5sim validate --calibrated prints them under the chip's).
  CHECK(chip.held_out_mape.rows == 6.0);
  CHECK(chip.held_out_mape.models == 9.0);
  CHECK_FALSE(chip.held_out_mape.setups);
  // An uncalibrated chip has none.
  CHECK_FALSE(hw::chip_from_yaml(test_configs::kSg2262, "chip.yaml").error_bands);
  // high below low; a kind that is none (the record's line 40 follows the chip's 39).
  CHECK(error_of(calibrated_chip("    decode: {rows: 8, low: 1.2, high: 1.1}\n")) ==
        "<memory:chip.yaml>:42:33: calibration.bands.decode.high: 1.1 is outside the plausible range 1.2..100");
  CHECK(error_of(calibrated_chip("    serving: {rows: 8, low: 0.9, high: 1.1}\n")) ==
        "<memory:chip.yaml>:42:5: calibration.bands.serving: unknown key; valid keys: all, basis, block, coverage, "
        "decode, kernel, prefill, throughput, tpot, ttft");
  CHECK_THAT(error_of(calibrated_chip("")), Catch::Contains("bands: record at least one kind"));
  CHECK_THAT(error_of(calibrated_chip("    all: {rows: 0, low: 0.9, high: 1.1}\n")),
             Catch::Contains("calibration.bands.all.rows"));
}

TEST_CASE("a run carries the band of its kind: total / high .. total / low", "[band][api]") {
  const g5sim::Chip chip = g5sim::Chip::from_yaml(
      calibrated_chip("    decode: {rows: 8, low: 0.8, high: 1.25}\n    prefill: {rows: 6, low: 0.5, high: 1.1}\n"
                      "    all: {rows: 20, low: 0.9, high: 1.1}\n"),
      "chip.yaml");
  // A decode step: measured = predicted / ratio, so the bounds are total / 1.25 and total / 0.8.
  const g5sim::Result decode = run(chip, "2x1@1024", "step");
  REQUIRE(decode.has_band);
  const double total = static_cast<double>(decode.total_ps);
  CHECK(decode.band_low_ps == static_cast<std::uint64_t>(std::llround(total / 1.25)));
  CHECK(decode.band_high_ps == static_cast<std::uint64_t>(std::llround(total / 0.8)));
  CHECK(decode.band_coverage == 0.8);
  CHECK(decode.band_basis == "80 % of 8 held-out rows (leave-one-out) of SG2262-test: calibration.bands.decode");
  CHECK_THAT(decode.json(), Catch::Contains("\"band_coverage\": 0.8,"));
  CHECK_THAT(decode.table(), Catch::Contains("band_ns       "));
  // A block: no block band, the `all` band.
  const g5sim::Result block = run(chip, "2x1@1024", "block");
  CHECK(block.band_low_ps == static_cast<std::uint64_t>(std::llround(static_cast<double>(block.total_ps) / 1.1)));
  CHECK(block.band_high_ps == static_cast<std::uint64_t>(std::llround(static_cast<double>(block.total_ps) / 0.9)));
  CHECK(block.band_basis == "80 % of 20 held-out rows (leave-one-out) of SG2262-test: calibration.bands.all");
  // A mixed step: the union of the decode and prefill bands, [0.5, 1.25].
  const g5sim::Result mixed = run(chip, "2x1@1024,1x128@0", "step");
  const double mixed_total = static_cast<double>(mixed.total_ps);
  CHECK(mixed.band_low_ps == static_cast<std::uint64_t>(std::llround(mixed_total / 1.25)));
  CHECK(mixed.band_high_ps == static_cast<std::uint64_t>(std::llround(mixed_total / 0.5)));
  CHECK(mixed.band_basis ==
        "80 % of 14 held-out rows (leave-one-out) of SG2262-test: calibration.bands.decode + prefill");
  // No record: no band, and the reason.
  const g5sim::Result plain = run(g5sim::Chip::from_yaml(test_configs::kSg2262, "plain.yaml"), "2x1@1024", "block");
  CHECK_FALSE(plain.has_band);
  CHECK(plain.band_low_ps == 0);
  CHECK_THAT(plain.band_basis, Catch::StartsWith("none: SG2262-test is not calibrated"));
  CHECK_THAT(plain.json(), Catch::Contains("\"band_low_ns\": null,"));
}

}  // namespace test_error_band
