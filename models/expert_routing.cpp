#include "models/expert_routing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/number_text.hpp"

namespace models {
namespace {

constexpr std::uint64_t kShareUnit = 1'000'000'000;  // a share's units: 10^-9

// Slots x a share (< 2^40 x 2^60) and a layer's weights need 128 bits; GCC and Clang have them.
__extension__ using Wide = unsigned __int128;

}  // namespace

ExpertAssignment uniform_routing(std::uint64_t experts, std::uint64_t top_k, std::uint64_t tokens, std::uint64_t ep) {
  const std::uint64_t local = (experts + ep - 1) / ep;  // the fullest rank (models/parallelism.hpp)
  const long double expected =
      static_cast<long double>(local) *
      (1.0L - std::pow(1.0L - static_cast<long double>(top_k) / static_cast<long double>(experts),
                       static_cast<long double>(tokens)));
  // Its share of the slots: local / experts of them (tokens * top_k / ep when ep divides experts).
  const std::uint64_t slots = ((hw::Count(tokens) * top_k * local + (experts - 1)) / experts).value();
  std::uint64_t touched = static_cast<std::uint64_t>(std::floor(expected + 0.5L));
  touched = std::max<std::uint64_t>(1, std::min({touched, local, slots}));
  ExpertAssignment a;
  for (std::uint64_t i = 0; i < touched; ++i) {
    a.experts.push_back(i);
    a.tokens.push_back(slots / touched + (i < slots % touched ? 1 : 0));
  }
  return a;
}

ExpertLoad ExpertLoad::from_csv_file(const std::string& path) { return from_csv_text(hw::read_input_file(path), path); }

ExpertLoad ExpertLoad::from_csv_text(const std::string& text, const std::string& source) {
  ExpertLoad load;
  load.source_ = source;
  std::istringstream lines(text);
  std::string line;
  std::uint64_t number = 0;
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  auto field = [&](std::string_view s, const char* what) {
    const std::optional<std::uint64_t> v = hw::read_whole_number(s);
    if (!v)
      throw hw::ConfigError(
          fmt::format("{}:{}: {}: {}", source, number, what, hw::whole_number_expected(s, 0, ~std::uint64_t{0})));
    return *v;
  };
  // A share: digits, at most one point and 9 decimals, in units of 10^-9 (at most 10^9 whole).
  auto share = [&](std::string_view s) {
    const auto point = s.find('.');
    const std::string_view whole = s.substr(0, point);
    const std::string_view fraction = point == std::string_view::npos ? std::string_view() : s.substr(point + 1);
    const bool digits = !whole.empty() && whole.size() <= 9 && fraction.size() <= 9 &&
                        (point == std::string_view::npos || !fraction.empty()) &&
                        whole.find_first_not_of("0123456789") == std::string_view::npos &&
                        fraction.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits) {
      throw hw::ConfigError(fmt::format(
          "{}:{}: share: '{}' is not a non-negative decimal below 10^9 with at most 9 decimals", source, number, s));
    }
    std::uint64_t v = 0;
    for (const char c : whole) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    std::uint64_t unit = kShareUnit;
    v *= unit;
    for (const char c : fraction) {
      unit /= 10;
      v += unit * static_cast<std::uint64_t>(c - '0');
    }
    return v;
  };
  while (std::getline(lines, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1) {
      if (line != "layer,expert,tokens" && line != "layer,expert,share") {
        throw hw::ConfigError(fmt::format(
            "{}:1: expected the header 'layer,expert,tokens' (counts) or 'layer,expert,share' (weights that scale with "
            "the batch), got '{}'",
            source, line));
      }
      load.shares_ = line == "layer,expert,share";
      continue;
    }
    if (line.empty()) continue;
    const auto c1 = line.find(',');
    const auto c2 = c1 == std::string::npos ? std::string::npos : line.find(',', c1 + 1);
    if (c2 == std::string::npos || line.find(',', c2 + 1) != std::string::npos) {
      throw hw::ConfigError(fmt::format("{}:{}: expected three fields layer,expert,{}, got '{}'", source, number,
                                        load.shares_ ? "share" : "tokens", line));
    }
    const std::string_view view(line);
    const std::uint64_t layer = field(view.substr(0, c1), "layer");
    const std::uint64_t expert = field(view.substr(c1 + 1, c2 - c1 - 1), "expert");
    const std::uint64_t tokens = load.shares_ ? share(view.substr(c2 + 1)) : field(view.substr(c2 + 1), "tokens");
    if (!seen.insert({layer, expert}).second) {
      throw hw::ConfigError(fmt::format("{}:{}: layer {} expert {} is listed twice", source, number, layer, expert));
    }
    load.first_line_.emplace(layer, number);
    ExpertAssignment& a = load.layers_[layer];
    if (tokens == 0) continue;
    a.experts.push_back(expert);
    a.tokens.push_back(tokens);
  }
  if (number == 0)
    throw hw::ConfigError(fmt::format("{}: empty file, expected the header 'layer,expert,tokens'", source));
  return load;
}

ExpertLoad ExpertLoad::for_step(std::uint64_t step_tokens, std::uint64_t top_k) const {
  if (!shares_) return *this;
  ExpertLoad out = *this;
  out.shares_ = false;
  const Wide slots = static_cast<Wide>(step_tokens) * top_k;
  for (auto& [layer, a] : out.layers_) {
    Wide weight = 0;  // at most 2^16 experts of at most 10^18 units: no wrap
    for (const std::uint64_t w : a.tokens) weight += w;
    if (weight == 0) {
      throw hw::ConfigError(
          fmt::format("{}:{}: layer {}: its shares are all 0", source_, first_line_.at(layer), layer));
    }
    // Whole slots first, then the rest by the largest remainder (stable: lower index on ties).
    std::vector<std::uint64_t> whole(a.tokens.size());
    std::vector<Wide> remainder(a.tokens.size());
    Wide given = 0;
    for (std::size_t i = 0; i < a.tokens.size(); ++i) {
      const Wide scaled = slots * a.tokens[i];  // < 2^64 x 2^60: fits 128 bits
      whole[i] = static_cast<std::uint64_t>(scaled / weight);
      remainder[i] = scaled % weight;
      given += whole[i];
    }
    std::vector<std::size_t> order(a.tokens.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::vector<std::uint64_t>& experts = a.experts;  // a lambda may not capture a structured binding
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      return remainder[x] != remainder[y] ? remainder[x] > remainder[y] : experts[x] < experts[y];
    });
    for (std::size_t k = 0; given < slots; ++k, ++given) ++whole[order[k]];
    ExpertAssignment scaled;
    for (std::size_t i = 0; i < a.tokens.size(); ++i) {
      if (whole[i] == 0) continue;
      scaled.experts.push_back(a.experts[i]);
      scaled.tokens.push_back(whole[i]);
    }
    a = std::move(scaled);
  }
  return out;
}

const ExpertAssignment* ExpertLoad::layer(std::uint64_t layer) const {
  const auto it = layers_.find(layer);
  return it == layers_.end() ? nullptr : &it->second;
}

void ExpertLoad::validate(std::uint64_t layers, const std::function<std::string(std::uint64_t)>& why_dense,
                          std::uint64_t experts, std::uint64_t top_k, std::uint64_t step_tokens) const {
  for (const auto& [layer, a] : layers_) {
    const std::uint64_t line = first_line_.at(layer);
    if (layer >= layers) {
      throw hw::ConfigError(
          fmt::format("{}:{}: layer {} is beyond the model's {} layers", source_, line, layer, layers));
    }
    if (const std::string why = why_dense(layer); !why.empty()) {
      throw hw::ConfigError(fmt::format("{}:{}: layer {} is a dense layer ({})", source_, line, layer, why));
    }
    // Each count is at most the step's slots, so the sum (at most 2^16 of them) cannot wrap.
    const std::uint64_t slots = step_tokens * top_k;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < a.experts.size(); ++i) {
      if (a.experts[i] >= experts) {
        throw hw::ConfigError(fmt::format("{}: layer {}: expert {} is out of range (n_routed_experts = {})", source_,
                                          layer, a.experts[i], experts));
      }
      if (a.tokens[i] > slots) {
        throw hw::ConfigError(fmt::format("{}: layer {}: expert {} gets {} token slots, more than the step's {}",
                                          source_, layer, a.experts[i], a.tokens[i], slots));
      }
      total += a.tokens[i];
    }
    if (total != step_tokens * top_k) {
      throw hw::ConfigError(
          fmt::format("{}:{}: layer {} routes {} token slots, but this step routes {} tokens x {} experts = {}",
                      source_, line, layer, total, step_tokens, top_k, step_tokens * top_k));
    }
  }
}

}  // namespace models
