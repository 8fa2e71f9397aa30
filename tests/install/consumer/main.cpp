// Uses the installed library as any program would: the shipped configs, one decode block, one op, a bad
// config caught as g5sim::ConfigError, a serve, a knob refused, a search's grid. Prints what
// tests/install/test_install.sh checks.
#include <g5sim/g5sim.hpp>
#include <g5sim/search.hpp>
#include <g5sim/sensitivity.hpp>
#include <g5sim/serve.hpp>
#include <g5sim/solve.hpp>
#include <iostream>

int main() {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  g5sim::Request request;
  request.scope = "block";
  request.batch = 1;
  request.tp = request.ep = request.dp = 1;
  const g5sim::Result r = g5sim::simulate(chip, model, request);
  const g5sim::OpRecord& read = r.op("kv_cache_read");
  // 1 x 4096 x 576 x 2 = 4,718,592 bytes of latent history.
  std::cout << "version " << g5sim::version() << "\n"
            << "kv_cache_read_bytes " << read.hbm_bytes << "\n"
            << "total_ps " << r.total_ps << "\n";
  // One op alone: [64, 128] x [128, 32] reads (64 x 128 + 128 x 32) x 2 and writes 64 x 32 x 2 bytes.
  const g5sim::OpResult mm = g5sim::simulate_matmul(chip, {64, 32, 128, "bf16"});
  std::cout << "matmul_unique_bytes " << mm.unique_bytes << "\n";
  try {
    g5sim::Model::from_yaml("name: x\nmodel_type: deepseek_v3\n", "bad");
  } catch (const g5sim::ConfigError& e) {
    std::cout << "error_field " << e.field() << " line " << e.line() << "\n";
  }
  // A serve: one request of 64 tokens in and 3 out on a one-layer step, its three tokens out.
  g5sim::ServeSettings settings;
  settings.set_text("concurrency", "1");
  settings.set_text("requests", "1");
  settings.set_text("input_len", "64");
  settings.set_text("output_len", "3");
  g5sim::Request step;
  step.layers = 1;
  const g5sim::ServeReport served = g5sim::serve(chip, model, step, settings);
  std::cout << "serve_output_tokens " << served.summary.output_tokens << "\n";
  try {
    settings.set_text("block_tokens", "0");
  } catch (const g5sim::ConfigError& e) {
    std::cout << "knob_error " << e.field() << ": " << e.what() << "\n";
  }
  // A search's grid: three batch caps on the one sharding given.
  const g5sim::DeploymentSearch search(g5sim::search_spec_of({chip}, model, step,
                                                             {{"concurrency", "1"},
                                                              {"requests", "1"},
                                                              {"input_len", "64"},
                                                              {"output_len", "3"},
                                                              {"tp", "1"},
                                                              {"ep", "1"},
                                                              {"dp", "1"},
                                                              {"max_seqs", "1,2,4"}}));
  std::cout << "search_grid " << search.grid_size() << "\n";
  return 0;
}
