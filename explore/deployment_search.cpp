// g5sim search's grid, passes and points (the rules in g5sim/search.hpp).

#include "explore/deployment_search.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "api/parallel_for.hpp"
#include "api/public_errors.hpp"
#include "api/result_state.hpp"
#include "explore/design_workload.hpp"
#include "g5sim/run_options.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "models/run_limits.hpp"

namespace g5sim {

struct DeploymentSearch::Grid {
  SearchSpec spec;
  std::vector<ServeRequest> requests;
  std::vector<SearchDimension> dimensions;
  std::vector<std::size_t> numeric;  ///< the numeric dimensions, by index, in table order
  std::vector<SearchKnobs> points;
  std::vector<std::vector<std::size_t>> coordinates;  ///< each point's index along the numeric lists
  std::vector<std::optional<PointOutcome>> outcomes;
  std::vector<std::uint64_t> pass_of;
  std::uint64_t passes = 0;
  std::vector<std::size_t> last;

  void check() const;
  void check_chunks() const;
  void lay_out();
  std::vector<std::size_t> neighbours(std::size_t index) const;
};

}  // namespace g5sim

namespace explore {
namespace {

using g5sim::Knob;
using g5sim::ServeRequest;

struct Sharding {
  std::uint64_t tp = 1, ep = 1, dp = 1;
  std::string refusal;
};

g5sim::Request with_sharding(g5sim::Request r, std::uint64_t tp, std::uint64_t ep, std::uint64_t dp) {
  r.tp = tp;
  r.ep = ep;
  r.dp = dp;
  return r;
}

// Powers of two 1, 2, 4, ... up to n.
std::vector<std::uint64_t> powers_up_to(std::uint64_t n) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t v = 1; v <= n; v *= 2) out.push_back(v);
  return out;
}

// A sharding list given (empty: any).
std::vector<std::uint64_t> degrees(const SearchSpec& spec, const char* name) {
  const std::string& text = spec.design.text(name);
  return text.empty() ? std::vector<std::uint64_t>{} : parse_knob_list(text, name, 1, models::kMaxDegree);
}

// The shardings given (each with its refusal), every combination of the three lists.
std::vector<Sharding> given_shardings(const g5sim::Chip& chip, const SearchSpec& spec,
                                      const std::vector<ServeRequest>& requests) {
  std::vector<Sharding> out;
  for (std::uint64_t tp : degrees(spec, "tp")) {
    for (std::uint64_t ep : degrees(spec, "ep")) {
      for (std::uint64_t dp : degrees(spec, "dp")) {
        const std::optional<std::string> why =
            g5sim::deployment_refusal(chip, spec.model, with_sharding(spec.base, tp, ep, dp), requests, spec.serve);
        out.push_back(Sharding{tp, ep, dp, why.value_or("")});
      }
    }
  }
  return out;
}

// A degree's candidates: its list as given, else the powers of two up to the chips' bound.
std::vector<std::uint64_t> candidates(const std::vector<std::uint64_t>& given) {
  return given.empty() ? powers_up_to(models::kMaxDegree) : given;
}

// Why no sharding serves, a line per value given in a list (the first refusal of a sharding
// with that value: tp 3 fails alike with every ep and dp), else the last refusal met.
struct Refusal {
  std::uint64_t tp, ep, dp;
  std::string why;
};
std::string refusals_text(const std::vector<Refusal>& refused, const std::vector<std::uint64_t>& tps,
                          const std::vector<std::uint64_t>& eps, const std::vector<std::uint64_t>& dps) {
  std::vector<std::string> lines;
  auto first_with = [&](const char* name, std::uint64_t v, std::uint64_t Refusal::*degree) {
    for (const Refusal& r : refused) {
      if (r.*degree != v) continue;
      const std::string line = fmt::format("{} {}: {} (tp {} ep {} dp {})", name, v, r.why, r.tp, r.ep, r.dp);
      if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
      return;
    }
  };
  for (std::uint64_t v : tps) first_with("tp", v, &Refusal::tp);
  for (std::uint64_t v : eps) first_with("ep", v, &Refusal::ep);
  for (std::uint64_t v : dps) first_with("dp", v, &Refusal::dp);
  if (lines.empty() && !refused.empty()) {
    const Refusal& r = refused.back();
    lines.push_back(fmt::format("the last tried, tp {} ep {} dp {}: {}", r.tp, r.ep, r.dp, r.why));
  }
  return lines.empty() ? "" : fmt::format(": {}", fmt::join(lines, "; "));
}

// The shardings a chip's points take (the rule in g5sim/search.hpp): tp x dp = n chips, by n,
// then tp, then ep; a list given is taken as it is (not only its powers of two), a degree left out
// runs over the powers of two.
std::vector<Sharding> shardings_of(const g5sim::Chip& chip, const SearchSpec& spec,
                                   const std::vector<ServeRequest>& requests) {
  const std::vector<std::uint64_t> tps = degrees(spec, "tp"), eps = degrees(spec, "ep"), dps = degrees(spec, "dp");
  if (!tps.empty() && !eps.empty() && !dps.empty()) return given_shardings(chip, spec, requests);
  struct Candidate {
    std::uint64_t chips, tp, ep, dp;
  };
  std::vector<Candidate> all;
  for (std::uint64_t tp : candidates(tps)) {
    for (std::uint64_t dp : candidates(dps)) {
      if (tp * dp > models::kMaxChips) continue;  // both at most 2^16: no overflow
      for (std::uint64_t ep : candidates(eps)) {
        if (ep <= tp * dp || !eps.empty()) all.push_back(Candidate{tp * dp, tp, ep, dp});
      }
    }
  }
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.chips, a.tp, a.ep, a.dp) < std::tie(b.chips, b.tp, b.ep, b.dp);
  });
  const std::uint64_t max_chips = spec.design.count("max_chips");
  std::vector<Sharding> out;
  std::optional<std::uint64_t> smallest;
  std::vector<Refusal> refused;
  for (const Candidate& c : all) {
    if (smallest && c.chips > std::max(*smallest, max_chips)) break;
    const std::optional<std::string> why =
        g5sim::deployment_refusal(chip, spec.model, with_sharding(spec.base, c.tp, c.ep, c.dp), requests, spec.serve);
    if (why) {
      refused.push_back(Refusal{c.tp, c.ep, c.dp, *why});
      continue;
    }
    if (!smallest) smallest = c.chips;
    out.push_back(Sharding{c.tp, c.ep, c.dp, ""});
  }
  if (out.empty()) {
    throw hw::InputError("sharding", fmt::format("no sharding of {} on {} serves this load{}", spec.model.name(),
                                                 chip.name(), refusals_text(refused, tps, eps, dps)));
  }
  return out;
}

// The grid's dimensions: every searchable knob, its list given or its one value (the serve's, a
// run option's the step's), numeric ones sorted.
std::vector<SearchDimension> dimensions_of(const SearchSpec& spec) {
  std::vector<SearchDimension> out;
  for (const Knob* k : g5sim::knobs_taking(g5sim::kSearchList)) {
    SearchDimension d{k, {}};
    const auto given =
        std::find_if(spec.lists.begin(), spec.lists.end(), [&](const auto& l) { return l.first == k->name; });
    if (given != spec.lists.end() && d.numeric()) {
      for (std::uint64_t v : parse_knob_list(given->second, k->name, k->min, k->max))
        d.values.push_back(std::to_string(v));
    } else if (given != spec.lists.end()) {
      d.values = parse_text_list(given->second, *k);
    } else if (k->run_option) {
      d.values.push_back(g5sim::option_text(g5sim::get_option(spec.base, *g5sim::find_run_option(k->name))));
    } else {
      d.values.push_back(spec.serve.text_of(k->name));
    }
    out.push_back(std::move(d));
  }
  return out;
}

// A point's step and serve: the spec's with its sharding and each dimension's value.
void apply_point(const SearchSpec& spec, const std::vector<SearchDimension>& dimensions,
                 const std::vector<std::string>& values, g5sim::Request& step, g5sim::ServeSettings& serve) {
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    const Knob& k = *dimensions[d].knob;
    if (k.run_option) {
      g5sim::set_option_text(step, *g5sim::find_run_option(k.name), values[d]);
    } else if (k.optional && values[d].empty()) {
      serve.reset(k.name);  // not given (a role's chip: the serve's)
    } else {
      serve.set_text(k.name, values[d]);
    }
  }
  // Attention-FFN disaggregation shards each side itself: the point's sharding is not its. A
  // role's chip belongs to points with roles (an FFN chip to AFD points, a prefill or decode chip
  // to disaggregated ones).
  if (serve.text("afd") != "none") step.tp.reset(), step.ep.reset(), step.dp.reset();
  if (serve.text("afd") == "none") serve.reset("ffn_chip");
  if (serve.text("disagg") == "none") serve.reset("prefill_chip"), serve.reset("decode_chip");
  // The acceptance rates belong to points with drafts.
  if (serve.count("mtp") == 0) {
    serve.reset("accept");
    serve.reset("accept_draw");
  }
  (void)spec;
}

// A chunk above the step's token budget: the budget caps a prompt's chunk, so the point is the
// one whose chunk is the budget; it is not run again (its row says so).
std::string chunk_refusal(const g5sim::ServeSettings& s) {
  const std::uint64_t chunk = s.count("chunk"), budget = s.count("max_batched_tokens");
  if (chunk <= budget) return "";
  return fmt::format(
      "chunk {} is above max_batched_tokens {}: a step's budget caps a prompt's chunk (chunk {} is "
      "the same step)",
      chunk, budget, budget);
}

std::string describe_load(const g5sim::ServeSettings& s, std::size_t requests) {
  if (!s.text("trace").empty()) return fmt::format("trace {} ({} requests)", s.text("trace"), requests);
  const std::optional<double> rate = s.optional_decimal("rate");
  const std::string source =
      rate ? fmt::format("rate {} requests/s", *rate) : fmt::format("concurrency {}", s.count("concurrency"));
  return fmt::format("{}, {} requests, input {}, output {}, seed {}", source, requests, s.text("input_len"),
                     s.text("output_len"), s.count("seed"));
}

}  // namespace

}  // namespace explore

namespace g5sim {

void DeploymentSearch::Grid::check() const {
  if (spec.chips.empty()) throw hw::InputError("chip", "give at least one chip");
  for (const Chip& chip : spec.chips) {
    if (spec.design.text("objective") == "tokens_per_joule" && !chip.data().chip.energy) {
      throw hw::InputError("objective", fmt::format("tokens_per_joule needs every chip's energy section; {} ({}) has "
                                                    "none",
                                                    chip.name(), chip.source()));
    }
  }
  if (spec.base.tp || spec.base.ep || spec.base.dp || spec.base.batch) {
    throw hw::InputError("tp", "a search takes its shardings from --tp, --ep and --dp lists (the batch from the load)");
  }
  bool drafts = false;
  for (const SearchDimension& d : dimensions) {
    if (d.knob->name != "mtp") continue;
    for (const std::string& v : d.values) drafts = drafts || v != "0";
  }
  check_chunks();
  const bool accept = !spec.serve.text("accept").empty();
  if (drafts && !accept) throw hw::InputError("mtp", "an mtp above 0 needs --accept (0.8, or 0.9,0.8)");
  if (!drafts && accept) throw hw::InputError("mtp", "--accept without an mtp above 0");
}

// Every chunk above every budget: no point could run (a point with some chunk above its budget
// is refused alone, explore::chunk_refusal).
void DeploymentSearch::Grid::check_chunks() const {
  const std::vector<std::string>* chunks = nullptr;
  const std::vector<std::string>* budgets = nullptr;
  for (const SearchDimension& d : dimensions) {
    if (d.knob->name == "chunk") chunks = &d.values;
    if (d.knob->name == "max_batched_tokens") budgets = &d.values;
  }
  if (!chunks || !budgets) return;
  std::uint64_t least_chunk = std::numeric_limits<std::uint64_t>::max(), most_budget = 0;
  for (const std::string& c : *chunks) least_chunk = std::min<std::uint64_t>(least_chunk, std::stoull(c));
  for (const std::string& b : *budgets) most_budget = std::max<std::uint64_t>(most_budget, std::stoull(b));
  if (least_chunk > most_budget) {
    throw hw::InputError("chunk", fmt::format("every chunk ({}) is above every max_batched_tokens ({}): a step's "
                                              "budget caps a prompt's chunk",
                                              fmt::join(*chunks, ","), fmt::join(*budgets, ",")));
  }
}

// Per chip, sharding and combination of the text lists, the product of the numeric lists.
void DeploymentSearch::Grid::lay_out() {
  std::vector<std::size_t> text;
  for (std::size_t d = 0; d < dimensions.size(); ++d) (dimensions[d].numeric() ? numeric : text).push_back(d);
  std::size_t block = 1, combinations = 1;
  for (std::size_t d : numeric) block *= dimensions[d].values.size();
  for (std::size_t d : text) combinations *= dimensions[d].values.size();
  // The afd dimension: a combination with attention-FFN disaggregation shards each side itself, so
  // its block is laid out once per chip (at its first sharding), its sharding the attention side's.
  std::optional<std::size_t> afd;
  for (std::size_t a = 0; a < text.size(); ++a) {
    if (dimensions[text[a]].knob->name == "afd") afd = a;
  }
  // Combination t's attention chips (the A of its "A:F", checked when the list was read; 0 for none).
  auto attention_chips_of = [&](std::size_t t) -> std::uint64_t {
    if (!afd) return 0;
    std::size_t rest = t;
    for (std::size_t a = text.size(); a-- > *afd + 1;) rest /= dimensions[text[a]].values.size();
    const SearchDimension& d = dimensions[text[*afd]];
    const std::string& value = d.values[rest % d.values.size()];
    if (value == "none") return 0;
    return hw::read_whole_number(value.substr(0, value.find(':'))).value_or(0);
  };
  for (std::size_t c = 0; c < spec.chips.size(); ++c) {
    const std::vector<explore::Sharding> shardings = explore::shardings_of(spec.chips[c], spec, requests);
    for (std::size_t s = 0; s < shardings.size(); ++s) {
      const explore::Sharding& sh = shardings[s];
      for (std::size_t t = 0; t < combinations; ++t) {
        const std::uint64_t attention_chips = attention_chips_of(t);
        if (attention_chips > 0 && s > 0) continue;
        if (points.size() + block > kMaxSearchPoints) {
          throw hw::InputError("sharding",
                               fmt::format("the grid has more than {} points: give shorter lists", kMaxSearchPoints));
        }
        for (std::size_t i = 0; i < block; ++i) {
          // The point's index along each list: the last list the fastest.
          std::vector<std::size_t> at(dimensions.size());
          std::size_t rest = i;
          for (std::size_t a = numeric.size(); a-- > 0;) {
            at[numeric[a]] = rest % dimensions[numeric[a]].values.size();
            rest /= dimensions[numeric[a]].values.size();
          }
          rest = t;
          for (std::size_t a = text.size(); a-- > 0;) {
            at[text[a]] = rest % dimensions[text[a]].values.size();
            rest /= dimensions[text[a]].values.size();
          }
          SearchKnobs k{c, sh.tp, sh.ep, sh.dp, {}, sh.refusal};
          if (attention_chips > 0) k = SearchKnobs{c, 1, 1, attention_chips, {}, ""};
          Request step = spec.base;
          ServeSettings serve = spec.serve;
          std::vector<std::string> given;
          for (std::size_t d = 0; d < dimensions.size(); ++d) given.push_back(dimensions[d].values[at[d]]);
          explore::apply_point(spec, dimensions, given, step, serve);
          if (k.refusal.empty()) k.refusal = explore::chunk_refusal(serve);
          // Each value as in effect (chunk 0: the point's budget).
          for (std::size_t d = 0; d < dimensions.size(); ++d) {
            const Knob& knob = *dimensions[d].knob;
            k.values.push_back(knob.run_option ? given[d] : knob_text(effective_value(serve, knob)));
          }
          std::vector<std::size_t> along;
          for (std::size_t d : numeric) along.push_back(at[d]);
          points.push_back(std::move(k));
          coordinates.push_back(std::move(along));
        }
      }
    }
  }
  outcomes.resize(points.size());
  pass_of.assign(points.size(), 0);
}

// A point's block (its chip, sharding and text values) starts at index - its offset in the
// block; a neighbour moves one numeric coordinate by one.
std::vector<std::size_t> DeploymentSearch::Grid::neighbours(std::size_t index) const {
  std::vector<std::size_t> sizes;
  for (std::size_t d : numeric) sizes.push_back(dimensions[d].values.size());
  const std::vector<std::size_t>& at = coordinates[index];
  std::size_t offset = 0;
  for (std::size_t a = 0; a < sizes.size(); ++a) offset = offset * sizes[a] + at[a];
  const std::size_t start = index - offset;
  std::vector<std::size_t> out;
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    for (int step : {-1, 1}) {
      if ((step < 0 && at[a] == 0) || (step > 0 && at[a] + 1 >= sizes[a])) continue;
      std::vector<std::size_t> moved = at;
      moved[a] = step < 0 ? at[a] - 1 : at[a] + 1;
      std::size_t o = 0;
      for (std::size_t b = 0; b < sizes.size(); ++b) o = o * sizes[b] + moved[b];
      out.push_back(start + o);
    }
  }
  return out;
}

DeploymentSearch::DeploymentSearch(SearchSpec spec) : grid_(std::make_unique<Grid>()) {
  api::public_errors([&] {
    Grid& g = *grid_;
    g.spec = std::move(spec);
    g.dimensions = explore::dimensions_of(g.spec);
    g.check();
    g.requests = requests_of(g.spec.serve);
    g.lay_out();
  });
}

DeploymentSearch::~DeploymentSearch() = default;

std::size_t DeploymentSearch::grid_size() const { return grid_->points.size(); }

const SearchKnobs& DeploymentSearch::knobs(std::size_t index) const { return grid_->points.at(index); }

std::vector<std::size_t> DeploymentSearch::next_pass() {
  Grid& g = *grid_;
  for (std::size_t i : g.last) {
    if (!g.outcomes[i]) throw std::logic_error("search: a pass's point was not recorded");
  }
  std::vector<std::size_t> next;
  if (g.passes == 0) {
    // The coarse pass: every other value of each numeric list, its ends always.
    const bool exhaustive = g.spec.design.flag("exhaustive");
    for (std::size_t i = 0; i < g.points.size(); ++i) {
      bool coarse = true;
      for (std::size_t a = 0; a < g.numeric.size(); ++a) {
        const std::size_t at = g.coordinates[i][a], size = g.dimensions[g.numeric[a]].values.size();
        coarse = coarse && (exhaustive || at % 2 == 0 || at + 1 == size);
      }
      if (coarse) next.push_back(i);
    }
  } else {
    // The report's points are the run points in grid order.
    const SearchReport r = report();
    std::set<std::size_t> wanted;
    std::size_t k = 0;
    for (std::size_t i = 0; i < g.points.size(); ++i) {
      if (g.pass_of[i] == 0) continue;
      const SearchPoint& p = r.points[k++];
      if (!p.on_front && !p.best_of_chip) continue;
      for (std::size_t n : g.neighbours(i)) {
        if (g.pass_of[n] == 0) wanted.insert(n);
      }
    }
    next.assign(wanted.begin(), wanted.end());
  }
  if (!next.empty()) ++g.passes;
  for (std::size_t i : next) g.pass_of[i] = g.passes;
  g.last = next;
  return next;
}

PointOutcome DeploymentSearch::run(std::size_t index, const std::shared_ptr<SharedStepTimes>& shared) const {
  const Grid& g = *grid_;
  const SearchKnobs& k = g.points.at(index);
  PointOutcome o;
  if (!k.refusal.empty()) {
    o.error = k.refusal;
    return o;
  }
  try {
    Request step = explore::with_sharding(g.spec.base, k.tp, k.ep, k.dp);
    ServeSettings settings = g.spec.serve;
    explore::apply_point(g.spec, g.dimensions, k.values, step, settings);
    settings.set("jobs", std::uint64_t{1});
    ServeControls controls;
    controls.shared_steps = shared;
    controls.max_steps = g.spec.max_steps;
    const ServeReport report = serve(g.spec.chips[k.chip], g.spec.model, step, g.requests, settings, controls);
    const ServeSummary& s = report.summary;
    o.chips = report.chips;
    o.tokens_per_s_per_chip = s.output_tokens_per_s_per_chip;
    o.tokens_per_s_per_user = s.output_tokens_per_s_per_user;
    o.ttft_p50_ms = s.ttft_ms.p50;
    o.ttft_p90_ms = s.ttft_ms.p90;
    o.ttft_p99_ms = s.ttft_ms.p99;
    o.tpot_p50_ms = s.tpot_ms.p50;
    o.tpot_p90_ms = s.tpot_ms.p90;
    o.tpot_p99_ms = s.tpot_ms.p99;
    o.goodput_requests_per_s = s.goodput_requests_per_s;
    if (report.energy) o.joules_per_token = report.energy->joules_per_token;
    // The engine's KV cache is over the DP ranks: a rank (its chips alike) holds kv_tokens / dp.
    const ServingMemory& memory = report.memory;
    o.bytes_per_chip =
        memory.weight_bytes + report.settings.count("kv_tokens") / memory.deployment.dp * memory.kv_bytes_per_token;
    o.fits = o.bytes_per_chip <= memory.capacity_bytes;
  } catch (const ConfigError& e) {
    o = PointOutcome{};
    o.error = e.what();
    return o;
  }
  return o;
}

void DeploymentSearch::record(std::size_t index, PointOutcome outcome) {
  grid_->outcomes.at(index) = std::move(outcome);
}

SearchReport DeploymentSearch::report() const {
  const Grid& g = *grid_;
  const SearchSpec& spec = g.spec;
  SearchReport r;
  r.model = spec.model.name();
  r.model_source = g5sim::source_label(spec.model.source());
  r.load = explore::describe_load(spec.serve, g.requests.size());
  for (const Chip& c : spec.chips) {
    r.chips.push_back(c.name());
    r.chip_sources.push_back(g5sim::source_label(c.source()));
  }
  r.slo_ttft_ms = spec.serve.optional_decimal("slo_ttft_ms");
  r.slo_tpot_ms = spec.serve.optional_decimal("slo_tpot_ms");
  r.slo_stat = spec.design.text("slo_stat");
  r.objective = spec.design.text("objective");
  r.step_cache = spec.serve.text("step_cache");
  if (!spec.base.runtime.empty() && spec.base.runtime != "none") {
    const Runtime& rt = runtime_named(spec.base.runtime);
    r.runtime = rt.version.empty() ? rt.name : rt.name + " " + rt.version;
    r.runtime_bands = runtime_bands_of(rt);
  }
  for (const auto& [degree, list] : {std::pair{"tp", &r.tp}, {"ep", &r.ep}, {"dp", &r.dp}}) {
    if (!spec.design.text(degree).empty()) *list = explore::degrees(spec, degree);
  }
  r.max_chips = spec.design.optional_count("max_chips");
  r.top = spec.design.count("top");
  r.dimensions = g.dimensions;
  r.grid_points = g.points.size();
  r.passes = g.passes;
  for (std::size_t i = 0; i < g.points.size(); ++i) {
    if (g.pass_of[i] == 0 || !g.outcomes[i]) continue;
    SearchPoint p;
    p.knobs = g.points[i];
    p.outcome = *g.outcomes[i];
    p.pass = g.pass_of[i];
    r.points.push_back(p);
  }
  const explore::Marks m = explore::mark(r.points, spec.chips.size(), spec);
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    r.points[i].meets_slo = m.meets[i];
    r.points[i].on_front = m.on_front[i];
    r.points[i].best = m.best == i;
  }
  for (const std::optional<std::size_t>& b : m.best_of_chip) {
    if (b) r.points[*b].best_of_chip = true;
  }
  r.fronts = m.fronts;
  r.best = m.best;
  r.best_of_chip = m.best_of_chip;
  return r;
}

SearchReport search_with(const SearchSpec& spec,
                         const std::function<std::vector<PointOutcome>(const std::vector<std::size_t>&)>& run_pass) {
  DeploymentSearch s(spec);
  for (std::vector<std::size_t> pass = s.next_pass(); !pass.empty(); pass = s.next_pass()) {
    const std::vector<PointOutcome> outcomes = run_pass(pass);
    if (outcomes.size() != pass.size()) throw std::logic_error("search: a pass returned another count of points");
    for (std::size_t i = 0; i < pass.size(); ++i) s.record(pass[i], outcomes[i]);
  }
  return s.report();
}

SearchReport search(const SearchSpec& spec,
                    const std::function<void(std::size_t, std::size_t, std::uint64_t)>& progress) {
  DeploymentSearch s(spec);
  std::vector<std::shared_ptr<SharedStepTimes>> stores;
  for (std::size_t c = 0; c < spec.chips.size(); ++c) stores.push_back(std::make_shared<SharedStepTimes>());
  const unsigned jobs = static_cast<unsigned>(spec.design.optional_count("jobs").value_or(api::default_jobs()));
  std::size_t done = 0, total = 0;
  std::uint64_t pass_number = 0;
  std::mutex lock;
  for (std::vector<std::size_t> pass = s.next_pass(); !pass.empty(); pass = s.next_pass()) {
    ++pass_number;
    total += pass.size();
    std::vector<PointOutcome> outcomes(pass.size());
    api::parallel_for(pass.size(), jobs, [&](std::size_t i) {
      // The point's chip's step store.
      outcomes[i] = s.run(pass[i], stores[s.knobs(pass[i]).chip]);
      const std::lock_guard<std::mutex> guard(lock);
      ++done;
      if (progress) progress(done, total, pass_number);
    });
    for (std::size_t i = 0; i < pass.size(); ++i) s.record(pass[i], outcomes[i]);
  }
  return s.report();
}

SearchSpec search_spec_of(std::vector<Chip> chips, Model model, Request base, const KnobItems& items) {
  return api::public_errors([&] {
    SearchSpec spec;
    spec.chips = std::move(chips);
    spec.model = std::move(model);
    spec.base = std::move(base);
    spec.serve.set_text("step_cache", "bucket:10");  // a search serves many times: bucketed unless given
    // A knob search may list is a dimension of its grid; the others set every point.
    KnobItems single;
    for (const auto& [key, value] : items) {
      const Knob* serve = spec.serve.find(key);
      if (serve && serve->takes_in(kSearchList)) {
        spec.lists.emplace_back(key, value);
      } else {
        single.emplace_back(key, value);
      }
    }
    explore::take_design_items(single, kSearchKnob, kSearchKnob | kSearchList, "search", spec.design, spec.serve);
    return spec;
  });
}

}  // namespace g5sim
