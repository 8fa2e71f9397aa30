// Fuzzes the step cache folder's entries (serving/step_store.hpp): any bytes read as an entry of
// the key "fuzz" are a miss or a whole step, never a crash, a hang or a large allocation; a step
// read back writes the same text again (the format is canonical once read).
#include <stdexcept>
#include <string>

#include "fuzz_common.hpp"
#include "serving/step_store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(data, size);
  const std::optional<g5sim::ChipStep> step = serving::read_step_entry(text, "fuzz");
  if (!step) return 0;
  const std::string written = serving::step_entry_text("fuzz", *step);
  const std::optional<g5sim::ChipStep> again = serving::read_step_entry(written, "fuzz");
  if (!again || serving::step_entry_text("fuzz", *again) != written) {
    throw std::logic_error("a step entry read back does not write the same text");
  }
  return 0;
}
