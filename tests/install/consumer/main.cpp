// Uses the installed library as any program would: the shipped configs, one decode block, one op, a bad
// config caught as g5sim::ConfigError. Prints what tests/install/test_install.sh checks.
#include <g5sim/g5sim.hpp>
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
  return 0;
}
