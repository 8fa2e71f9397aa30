#include "hw/calibration_record.hpp"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "hw/config_error.hpp"

namespace hw {

std::optional<ErrorBands> read_calibration_record(ConfigMap c, HeldOutMape& held_out) {
  c.expect_keys({"g5sim", "date", "base", "measured", "rows", "transferred_from", "fitted", "mape_before_pct",
                 "mape_after_pct", "leave_one_out_mape_pct", "leave_one_model_out_mape_pct",
                 "leave_one_setup_out_mape_pct", "leave_one_run_out_mape_pct", "bands"});
  for (std::string_view key : {"g5sim", "date", "base", "measured"}) c.string(key);
  // A transferred fit (g5sim calibrate --transfer-from): no row of this chip was fitted, so its
  // rows' MAPE (leave_one_out_mape_pct) is all held out.
  if (c.has("transferred_from")) held_out.transferred_from = c.string("transferred_from");
  c.string_list("rows");
  held_out.fitted = c.string_list("fitted");
  c.non_negative_number("mape_before_pct");
  held_out.fit_rows = c.non_negative_number("mape_after_pct");
  held_out.rows = c.non_negative_number("leave_one_out_mape_pct");
  if (c.has("leave_one_model_out_mape_pct")) held_out.models = c.non_negative_number("leave_one_model_out_mape_pct");
  if (c.has("leave_one_setup_out_mape_pct")) held_out.setups = c.non_negative_number("leave_one_setup_out_mape_pct");
  if (c.has("leave_one_run_out_mape_pct")) held_out.runs = c.non_negative_number("leave_one_run_out_mape_pct");
  std::optional<ErrorBands> bands;
  if (c.has("bands")) {
    ConfigMap b = c.map("bands");
    std::vector<std::string_view> keys{"coverage", "basis"};
    for (std::size_t k = 0; k < kBandKindCount; ++k) keys.push_back(name_of(static_cast<BandKind>(k)));
    b.expect_keys(keys);
    bands.emplace();
    bands->coverage = b.number_in("coverage", 0, 1, true);
    bands->basis = b.string("basis");
    for (std::size_t k = 0; k < kBandKindCount; ++k) {
      const std::string_view name = name_of(static_cast<BandKind>(k));
      if (!b.has(name)) continue;
      ConfigMap one = b.map(name);
      one.expect_keys({"rows", "low", "high"});
      ErrorBand band;
      band.kind = static_cast<BandKind>(k);
      band.rows = one.int_in("rows", 1, std::uint64_t{1} << 32);
      band.low_ratio = one.number_in("low", 0.01, 100);
      band.high_ratio = one.number_in("high", band.low_ratio, 100);
      one.finish();
      bands->bands.push_back(band);
    }
    if (bands->bands.empty()) {
      throw ConfigError(fmt::format("{}: bands: record at least one kind ({})", b.where(), band_kind_names()),
                        b.site());
    }
    b.finish();
  }
  c.finish();
  return bands;
}

}  // namespace hw
