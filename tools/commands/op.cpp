// g5sim op matmul | fa2 | all_reduce | all_to_all: one op alone on a chip (a microbenchmark), table or JSON.

#include <iostream>
#include <string_view>

#include "g5sim/run_options.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {
namespace {

class OpCommand final : public Command {
 public:
  explicit OpCommand(CLI::App& parent)
      : Command(parent.add_subcommand("op", "simulate one op alone (microbenchmark)")) {
    app()->require_subcommand(1);
    matmul_ = app()->add_subcommand("matmul", "[m, k] x [k, n]");
    matmul_->add_option("--m", mm_.m, "rows")->required()->check(count_in(1, g5sim::run_limits().max_context));
    matmul_->add_option("--n", mm_.n, "columns")->required()->check(count_in(1, g5sim::run_limits().max_context));
    matmul_->add_option("--k", mm_.k, "reduction")->required()->check(count_in(1, g5sim::run_limits().max_context));
    matmul_
        ->add_option("--dtype", mm_.dtype,
                     "bf16, fp8 or fp32 (plain operands), or mxfp8, mxfp6, mxfp4, nvfp4 (both operands microscaled, "
                     "their block scales streamed with them: an e8m0 scale per 32, nvfp4 an e4m3 scale per 16)")
        ->capture_default_str();
    add_common(matmul_);
    CLI::App* fa2 = app()->add_subcommand("fa2", "flash attention (decode when q-len < kv-len)");
    fa2->add_option("--batch", fa_.batch, "sequences")
        ->capture_default_str()
        ->check(count_in(1, g5sim::run_limits().max_batch));
    fa2->add_option("--q-len", fa_.q_len, "query tokens per sequence")
        ->capture_default_str()
        ->check(count_in(1, g5sim::run_limits().max_context));
    fa2->add_option("--kv-len", fa_.kv_len, "tokens attended")
        ->required()
        ->check(count_in(1, g5sim::run_limits().max_context));
    fa2->add_option("--heads", fa_.heads, "query heads")->required()->check(count_in(1, g5sim::run_limits().max_heads));
    fa2->add_option("--kv-heads", fa_.kv_heads, "KV heads")
        ->capture_default_str()
        ->check(count_in(1, g5sim::run_limits().max_heads));
    fa2->add_option("--qk-dim", fa_.qk_dim, "score dimension")
        ->required()
        ->check(count_in(1, g5sim::run_limits().max_head_dim));
    fa2->add_option("--v-dim", fa_.v_dim, "value dimension")
        ->required()
        ->check(count_in(1, g5sim::run_limits().max_head_dim));
    fa2->add_flag("--shared-kv", fa_.shared_kv, "V is the first v-dim elements of K (MLA latent)");
    fa2->add_flag("--causal", fa_.causal, "prefill: each query attends the keys up to itself (skips the rest)");
    add_common(fa2);
    for (const char* kind : {"all_reduce", "all_to_all"}) {
      const bool reduce = std::string_view(kind) == "all_reduce";
      CLI::App* c = app()->add_subcommand(
          kind, reduce ? "ring all-reduce of --bytes per chip among --chips chips"
                       : "all-to-all: each of --chips chips sends --bytes, an equal share to each peer (peers in "
                         "other nodes first, through the network interface)");
      c->add_option("--bytes", reduce ? reduce_.bytes : all_to_all_.bytes,
                    reduce ? "the buffer each chip reduces" : "bytes each chip sends")
          ->required()
          ->check(count_in(1, std::uint64_t{1} << 40));
      c->add_option("--chips", reduce ? reduce_.chips : all_to_all_.chips, "chips taking part")
          ->required()
          ->check(count_in(2, g5sim::run_limits().max_chips));
      c->add_option("--chip", chip_, "chip config YAML, or a shipped chip's name (g5sim list) [default: sg2262]")
          ->check(non_empty_path());
      c->add_option("--json", json_, "write JSON to PATH ('-' for stdout only)")->check(non_empty_path());
      (reduce ? reduce_cmd_ : all_to_all_cmd_) = c;
    }
    reduce_.kind = "all_reduce";
    all_to_all_.kind = "all_to_all";
  }

  int run(const CliLimits&) override {
    const g5sim::Chip chip = chip_of(chip_);
    const g5sim::OpResult result = *matmul_           ? g5sim::simulate_matmul(chip, mm_, cores_)
                                   : *reduce_cmd_     ? g5sim::simulate_collective(chip, reduce_)
                                   : *all_to_all_cmd_ ? g5sim::simulate_collective(chip, all_to_all_)
                                                      : g5sim::simulate_attention(chip, fa_, cores_);
    OutputSet outputs({{"--json", json_}});
    if (!outputs.on_stdout()) std::cout << result.table();
    if (OutputFile* json = outputs.get("--json")) json->stream() << result.json();
    outputs.close();
    return 0;
  }

 private:
  void add_common(CLI::App* cmd) {
    cmd->add_option("--chip", chip_, "chip config YAML, or a shipped chip's name (g5sim list) [default: sg2262]")
        ->check(non_empty_path());
    cmd->add_option("--cores", cores_, "cores to use (default: all)")
        ->check(count_in(0, g5sim::run_limits().max_cores));
    cmd->add_option("--json", json_, "write JSON to PATH ('-' for stdout only)")->check(non_empty_path());
  }

  CLI::App* matmul_ = nullptr;
  CLI::App *reduce_cmd_ = nullptr, *all_to_all_cmd_ = nullptr;
  g5sim::CollectiveOp reduce_, all_to_all_;
  g5sim::MatmulOp mm_;
  g5sim::AttentionOp fa_;
  std::string chip_, json_;
  std::uint32_t cores_ = 0;
};

}  // namespace

CommandPtr make_op(CLI::App& app) { return std::make_unique<OpCommand>(app); }

}  // namespace tools
