#pragma once
// How far a calibrated chip's predictions are from measurements it was not fitted to.
//
// Model. g5sim calibrate cross-validates its fit: every measured row i of the chip is predicted by
// a fit that did not see it (its fold held out), giving the time ratio
//   r_i = t_predicted,i / t_measured,i
// (for a rate metric, tokens/s or TFLOPS, the inverse of the rate ratio). Rows are grouped by the
// kind of work they measure: `kernel` (one op alone), `block` (one attention block), `decode` and
// `prefill` (whole decoder steps; a Sophgo first token is a prefill step), and `all`. For each
// kind with rows, the record keeps the ratios' lower and upper quantiles q_lo, q_hi at the
// coverage c (0.8: the 10th and 90th percentiles, linearly interpolated between sorted ratios).
// A prediction t of that kind then has the band
//   [t / q_hi, t / q_lo]
// which held c of the cross-validated rows' measurements. A kind without rows of its own uses
// `all`; a run on a chip without a record has no band, and says so. The band is only as good as
// the rows behind it: its `rows` count and `basis` travel with it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hw {

/// The work a prediction is of, as the bands group measured rows: a chip's kinds, then a
/// runtime's serving metrics (its fit's serve rows: time to first token, time per output token
/// with the inter-token latency, output throughput), then every row.
enum class BandKind : std::uint8_t { kernel, block, decode, prefill, ttft, tpot, throughput, all };
inline constexpr std::size_t kBandKindCount = 8;
std::string_view name_of(BandKind k);
std::optional<BandKind> band_kind_named(std::string_view name);
/// "kernel, block, ... or all", for messages.
std::string band_kind_names();

struct ErrorBand {
  BandKind kind = BandKind::all;
  std::uint64_t rows = 0;   ///< cross-validated rows behind it
  double low_ratio = 1.0;   ///< q_lo of predicted / measured time
  double high_ratio = 1.0;  ///< q_hi
};

struct ErrorBands {
  double coverage = 0.8;  ///< the share of rows each band held
  std::string basis;      ///< how the residuals were held out ("leave-one-out", "10 folds")
  std::vector<ErrorBand> bands;

  /// The band of `kind`, else the `all` band; null when neither was recorded.
  const ErrorBand* band_for(BandKind kind) const;
};

/// The calibration record's cross-validated MAPEs (percent): each row predicted by a fit that did
/// not see it (row folds), its model's rows, its set-up's rows or its benchmark run's rows.
struct HeldOutMape {
  std::vector<std::string> fitted;  ///< the record's `fitted`: "FIELD BEFORE -> AFTER in [LO, HI]"
  double fit_rows = 0;              ///< mape_after_pct: the fitted rows' MAPE at the fit
  double rows = 0;
  std::optional<double> models, setups, runs;
  std::string transferred_from;  ///< non-empty: the fit is another chip's; `rows` is every row of this one
};

/// The quantile q in [0, 1] of `values` (sorted ascending, non-empty), linearly interpolated
/// between the two nearest order statistics (position q (n - 1)).
double interpolated_quantile(const std::vector<double>& sorted, double q);

}  // namespace hw
