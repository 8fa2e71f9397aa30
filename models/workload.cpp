#include "models/workload.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/number_text.hpp"

namespace models {

namespace {

std::uint64_t sum_over(const std::vector<SequenceGroup>& groups, std::uint64_t (*per_group)(const SequenceGroup&)) {
  hw::Count n(0);
  for (const SequenceGroup& g : groups) n += hw::Count(per_group(g));
  return n.value();
}

}  // namespace

std::uint64_t Workload::sequences() const {
  return sum_over(groups, [](const SequenceGroup& g) { return g.count; });
}
std::uint64_t Workload::tokens() const {
  return sum_over(groups, [](const SequenceGroup& g) { return (hw::Count(g.count) * g.q_len).value(); });
}
std::uint64_t Workload::history_tokens() const {
  return sum_over(groups, [](const SequenceGroup& g) { return (hw::Count(g.count) * g.history).value(); });
}
std::uint64_t Workload::cached_tokens() const {
  return sum_over(groups, [](const SequenceGroup& g) { return (hw::Count(g.count) * g.kv_len()).value(); });
}
std::uint64_t Workload::logit_rows() const {
  return sum_over(groups,
                  [](const SequenceGroup& g) { return g.decode ? (hw::Count(g.count) * g.q_len).value() : g.count; });
}
bool Workload::has_decode() const {
  return std::any_of(groups.begin(), groups.end(), [](const SequenceGroup& g) { return g.decode; });
}
bool Workload::has_prefill() const {
  return std::any_of(groups.begin(), groups.end(), [](const SequenceGroup& g) { return !g.decode; });
}
Workload Workload::part(bool decode_path) const {
  Workload w = *this;
  std::erase_if(w.groups, [&](const SequenceGroup& g) { return g.decode != decode_path; });
  return w;
}
std::uint64_t Workload::max_q_len() const {
  std::uint64_t m = 0;
  for (const SequenceGroup& g : groups) m = std::max(m, g.q_len);
  return m;
}
std::uint64_t Workload::max_kv_len() const {
  std::uint64_t m = 0;
  for (const SequenceGroup& g : groups) m = std::max(m, g.kv_len());
  return m;
}

Workload make_workload(Phase phase, std::uint64_t batch, std::uint64_t ctx, std::optional<std::uint64_t> q_len,
                       KvFormat kv_format) {
  if (batch == 0) throw hw::InputError("batch", "the batch must be a positive integer");
  if (ctx == 0) throw hw::InputError("kv_len", "the context length kv_len must be a positive integer");
  if (batch > kMaxBatch) throw hw::InputError("batch", fmt::format("{} is outside 1..{} sequences", batch, kMaxBatch));
  if (ctx > kMaxContext) {
    throw hw::InputError("kv_len", fmt::format("{} is outside 1..{} tokens", ctx, kMaxContext));
  }
  Workload w;
  w.kv_format = kv_format;
  if (phase == Phase::decode) {
    const std::uint64_t q = q_len.value_or(1);
    if (q == 0 || q >= ctx) {
      throw hw::InputError("q_len",
                           fmt::format("decode needs 1 <= q_len < kv_len, got q_len {} with kv_len {}", q, ctx));
    }
    w.groups = {SequenceGroup{batch, q, ctx, true}};
  } else {
    const std::uint64_t q = q_len.value_or(ctx);
    if (q != ctx) {
      throw hw::InputError("q_len", fmt::format("prefill processes the whole prompt: q_len must equal kv_len ({}), "
                                                "got {}",
                                                ctx, q));
    }
    w.groups = {SequenceGroup{batch, ctx, 0, false}};
  }
  return w;
}

SequenceGroup classify_group(std::uint64_t count, std::uint64_t q_len, std::uint64_t history,
                             std::uint64_t decode_max_q) {
  const bool decode = history > 0 && q_len <= decode_max_q && q_len < history;
  return SequenceGroup{count, q_len, history, decode};
}

Workload make_mixed_workload(std::vector<SequenceGroup> groups, KvFormat kv_format, const std::string& field) {
  if (groups.empty()) throw hw::InputError(field, "a step needs at least one group of sequences");
  if (groups.size() > kMaxSequenceGroups) {
    throw hw::InputError(field,
                         fmt::format("{} groups, above the {} one step may hold", groups.size(), kMaxSequenceGroups));
  }
  std::uint64_t sequences = 0;
  for (const SequenceGroup& g : groups) {
    const std::string where = fmt::format("group {}x{}@{}", g.count, g.q_len, g.history);
    if (g.count == 0 || g.count > kMaxBatch) {
      throw hw::InputError(field, fmt::format("{}: count {} is outside 1..{} sequences", where, g.count, kMaxBatch));
    }
    if (g.q_len == 0 || g.q_len > kMaxContext) {
      throw hw::InputError(field, fmt::format("{}: q_len {} is outside 1..{} tokens", where, g.q_len, kMaxContext));
    }
    if (g.kv_len() > kMaxContext) {
      throw hw::InputError(field, fmt::format("{}: history + q_len = {} is above the {} tokens a sequence may attend",
                                              where, g.history + g.q_len, kMaxContext));
    }
    sequences += g.count;
    if (sequences > kMaxBatch) {
      throw hw::InputError(field, fmt::format("more than {} sequences in one step", kMaxBatch));
    }
  }
  Workload w;
  w.dealt = true;
  w.kv_format = kv_format;
  w.groups = std::move(groups);
  return w;
}

std::vector<SequenceGroup> parse_mix(std::string_view text, std::uint64_t decode_max_q) {
  std::vector<SequenceGroup> groups;
  auto number = [&](std::string_view part, std::string_view entry, const char* what) {
    const std::optional<std::uint64_t> v = hw::read_whole_number(part);
    if (!v) {
      throw hw::InputError("mix", fmt::format("'{}': {} '{}' is not a whole number (expected COUNTxQ_LEN@HISTORY, "
                                              "as 64x1@4096)",
                                              entry, what, part));
    }
    return *v;
  };
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view entry = text.substr(begin, comma - begin);
    const std::size_t x = entry.find('x'), at = entry.find('@');
    if (x == std::string_view::npos || at == std::string_view::npos || at < x) {
      throw hw::InputError("mix", fmt::format("'{}' is not COUNTxQ_LEN@HISTORY (as 64x1@4096 or 1x2048@0)", entry));
    }
    if (groups.size() == kMaxSequenceGroups) {
      throw hw::InputError("mix", fmt::format("more than {} groups", kMaxSequenceGroups));
    }
    groups.push_back(classify_group(number(entry.substr(0, x), entry, "COUNT"),
                                    number(entry.substr(x + 1, at - x - 1), entry, "Q_LEN"),
                                    number(entry.substr(at + 1), entry, "HISTORY"), decode_max_q));
    begin = comma + 1;
  }
  return groups;
}

std::vector<SequenceGroup> read_sequence_file(const std::string& path, std::uint64_t decode_max_q) {
  return parse_sequence_text(hw::read_input_file(path), path, decode_max_q);
}

std::vector<SequenceGroup> parse_sequence_text(const std::string& text, const std::string& path,
                                               std::uint64_t decode_max_q) {
  std::vector<SequenceGroup> groups;
  int line_number = 0;
  bool header = false;
  auto fail = [&](int column, const std::string& message) {
    throw hw::ConfigError(fmt::format("{}:{}:{}: {}", path, line_number, column, message),
                          hw::ErrorSite{path, "seqs", line_number, column});
  };
  line_number = hw::for_each_line(text, [&](std::string_view line, int number) {
    line_number = number;
    if (line.empty() || line.front() == '#') return;
    if (!header) {
      if (line != "count,q_len,history")
        fail(1, fmt::format("expected the header count,q_len,history, got '{}'", line));
      header = true;
      return;
    }
    std::uint64_t cells[3] = {0, 0, 0};
    static constexpr const char* kNames[3] = {"count", "q_len", "history"};
    std::size_t pos = 0;
    for (int c = 0; c < 3; ++c) {
      const std::size_t stop = c < 2 ? line.find(',', pos) : line.size();
      if (stop == std::string_view::npos)
        fail(static_cast<int>(line.size()) + 1, "expected 3 cells: count,q_len,history");
      const std::string_view cell = line.substr(pos, stop - pos);
      const std::optional<std::uint64_t> v = hw::read_whole_number(cell);
      if (!v) fail(static_cast<int>(pos) + 1, fmt::format("{}: '{}' is not a whole number", kNames[c], cell));
      cells[c] = *v;
      pos = stop + 1;
    }
    if (groups.size() == kMaxSequenceGroups) fail(1, fmt::format("more than {} groups", kMaxSequenceGroups));
    const SequenceGroup g = classify_group(cells[0], cells[1], cells[2], decode_max_q);
    try {
      (void)make_mixed_workload({g}, KvFormat::bf16, "seqs");
    } catch (const hw::InputError& e) {
      fail(1, e.what());
    }
    groups.push_back(g);
  });
  if (!header) {
    throw hw::ConfigError(fmt::format("{}: empty: expected the header count,q_len,history and a row per group", path),
                          hw::ErrorSite{path, "seqs", 0, 0});
  }
  if (groups.empty()) {
    throw hw::ConfigError(fmt::format("{}:{}: no groups after the header", path, line_number),
                          hw::ErrorSite{path, "seqs", line_number, 0});
  }
  return groups;
}

std::string mix_text(const std::vector<SequenceGroup>& groups) {
  std::string text;
  for (const SequenceGroup& g : groups) {
    text += fmt::format("{}{}x{}@{}", text.empty() ? "" : ",", g.count, g.q_len, g.history);
  }
  return text;
}

Phase parse_phase(const std::string& text) {
  if (text == "decode") return Phase::decode;
  if (text == "prefill") return Phase::prefill;
  throw hw::InputError("phase", fmt::format("expected decode or prefill, got '{}'", text));
}

KvFormat parse_kv_format(std::string_view text) {
  if (text == "bf16") return KvFormat::bf16;
  if (text == "fp8") return KvFormat::fp8;
  if (text == "fp8-flashmla") return KvFormat::fp8_flashmla;
  if (text == "mxfp8") return KvFormat::mxfp8;
  if (text == "mxfp6") return KvFormat::mxfp6;
  if (text == "mxfp4") return KvFormat::mxfp4;
  if (text == "nvfp4") return KvFormat::nvfp4;
  throw hw::InputError("kv_format", fmt::format("expected bf16, fp8, fp8-flashmla, mxfp8, mxfp6, mxfp4 or nvfp4, got "
                                                "'{}'",
                                                text));
}

MlaMode parse_mla_mode(std::string_view text, const std::string& field) {
  if (text == "absorb") return MlaMode::absorb;
  if (text == "standard") return MlaMode::standard;
  if (text == "expanded") return MlaMode::expanded;
  throw hw::InputError(field, fmt::format("expected absorb, standard or expanded, got '{}'", text));
}

PrefillAttention parse_prefill_attention(std::string_view text) {
  if (text == "causal") return PrefillAttention::causal;
  if (text == "full") return PrefillAttention::full;
  throw hw::InputError("prefill_attention", fmt::format("expected causal or full, got '{}'", text));
}

std::string_view name_of(PrefillAttention a) { return a == PrefillAttention::causal ? "causal" : "full"; }

KvAppend parse_kv_append(std::string_view text) {
  if (text == "in-place") return KvAppend::in_place;
  if (text == "concat") return KvAppend::concat;
  throw hw::InputError("kv_append", fmt::format("expected in-place or concat, got '{}'", text));
}

std::string_view name_of(KvAppend a) { return a == KvAppend::in_place ? "in-place" : "concat"; }

LmHeadWeights parse_lm_head_weights(std::string_view text) {
  if (text == "bf16") return LmHeadWeights::bf16;
  if (text == "projections") return LmHeadWeights::projections;
  throw hw::InputError("lm_head_weights", fmt::format("expected bf16 or projections, got '{}'", text));
}

std::string_view name_of(LmHeadWeights w) { return w == LmHeadWeights::bf16 ? "bf16" : "projections"; }

std::string_view name_of(KvFormat f) {
  switch (f) {
    case KvFormat::bf16: return "bf16";
    case KvFormat::fp8: return "fp8";
    case KvFormat::fp8_flashmla: return "fp8-flashmla";
    case KvFormat::mxfp8: return "mxfp8";
    case KvFormat::mxfp6: return "mxfp6";
    case KvFormat::mxfp4: return "mxfp4";
    case KvFormat::nvfp4: return "nvfp4";
  }
  return "?";
}

std::string_view name_of(MlaMode m) {
  switch (m) {
    case MlaMode::absorb: return "absorb";
    case MlaMode::standard: return "standard";
    case MlaMode::expanded: return "expanded";
  }
  return "?";
}

}  // namespace models
