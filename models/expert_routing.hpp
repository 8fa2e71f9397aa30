#pragma once
// Which routed experts one MoE layer's step touches, and how many tokens each receives. That
// decides the expert weight bytes read (every touched expert's gate, up and down matrices) and
// each expert GEMM's M.
//
// Default, uniform routing: T tokens each pick k of E experts. The expected number of distinct
// experts touched is D = E * (1 - (1 - k/E)^T); we use D rounded to the nearest integer (halves
// up), and spread the T*k routed token slots over them as evenly as possible (the first
// T*k mod D experts get one more).
//
// Measured routing (--expert-load FILE): a CSV with the header `layer,expert,tokens`; a listed
// layer reads exactly its experts with tokens > 0, each with its own M; the tokens of a layer must
// add up to T*k. Layers not listed use the default.
//
// Or shares that scale with the step (the header `layer,expert,share`): each share a non-negative
// decimal (at most 9 digits after the point), a weight relative to the layer's others (token
// counts measured at another batch will do). A step of T tokens gives expert e of a layer whose
// shares sum to W the slots floor(T k w_e / W), and the T k - sum of those left over go one each
// to the largest remainders (ties: the lower expert index), in exact integer arithmetic; an
// expert left with 0 slots is not touched.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace models {

struct ExpertAssignment {
  std::vector<std::uint64_t> experts;  ///< expert indices touched
  std::vector<std::uint64_t> tokens;   ///< tokens routed to each (parallel to experts)
};

/// The uniform-routing expectation above. With expert parallelism, the share of one of `ep`
/// ranks holding experts / ep of them: round(experts/ep (1 - (1 - k/experts)^T)) experts touched,
/// ceil(T k / ep) token slots.
ExpertAssignment uniform_routing(std::uint64_t experts, std::uint64_t top_k, std::uint64_t tokens,
                                 std::uint64_t ep = 1);

class ExpertLoad {
 public:
  /// Reads a CSV file; throws hw::ConfigError naming file:line on malformed rows.
  static ExpertLoad from_csv_file(const std::string& path);
  static ExpertLoad from_csv_text(const std::string& text, const std::string& source);

  /// The listed experts of `layer` (tokens > 0), or nothing if the layer is not listed.
  const ExpertAssignment* layer(std::uint64_t layer) const;
  /// The load in token slots of a step of `step_tokens` tokens, each routed to `top_k` experts:
  /// itself when it lists tokens, its shares apportioned (above) when it lists shares.
  ExpertLoad for_step(std::uint64_t step_tokens, std::uint64_t top_k) const;
  /// Checks the file against the model and the step: MoE layers only, expert indices in range,
  /// tokens adding up to T*k. Throws hw::ConfigError naming the file.
  /// `why_dense(l)`: why layer l has a dense FFN ("" for a MoE layer), as the model says it.
  void validate(std::uint64_t layers, const std::function<std::string(std::uint64_t)>& why_dense, std::uint64_t experts,
                std::uint64_t top_k, std::uint64_t step_tokens) const;

 private:
  std::string source_;
  bool shares_ = false;  ///< `tokens` of the assignments are shares in units of 10^-9
  std::map<std::uint64_t, ExpertAssignment> layers_;
  std::map<std::uint64_t, std::uint64_t> first_line_;  ///< layer -> its first line, for messages
};

}  // namespace models
