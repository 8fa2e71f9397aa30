#include "sim/command_queue.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/compact_storage.hpp"

namespace sim {
namespace {

// The header's flags (the second byte is there only when it says more than "none").
enum : std::uint8_t { kAmountDiffers = 1u << 6, kSecondByte = 1u << 7, kOpDiffers = 1u << 3, kRowNonzero = 1u << 4 };
constexpr unsigned kEngineBits = 3;
static_assert(kMaxEngines <= (1u << kEngineBits), "a wait's engine fits the low bits of its varint");

// Differences of 32-bit ids and op numbers, as zigzag so that small steps back stay short.
std::uint64_t zigzag(std::uint32_t now, std::uint32_t before) {
  return zigzag64(static_cast<std::int64_t>(now) - static_cast<std::int64_t>(before));
}
std::uint32_t unzigzag(std::uint64_t z, std::uint32_t before) {
  return static_cast<std::uint32_t>(static_cast<std::int64_t>(before) + unzigzag64(z));
}

}  // namespace

void CommandQueue::push_back(const Command& cmd) {
  if (size_ % kBlock == 0) {
    blocks_.push_back(bytes_.size());
    op_ = 0, amount_ = 0, ids_ = {};
  }
  // At most 2 header bytes, 3 varints of up to 10 bytes and 4 waits of up to 6.
  std::uint8_t* const buffer = bytes_.room(2 + 3 * 10 + Command::kMaxWaits * 6);
  const bool amount_differs = cmd.amount != amount_;
  const bool row_nonzero = cmd.row_bytes != 0;
  const bool op_differs = cmd.op != op_;
  const auto second = static_cast<std::uint8_t>(static_cast<unsigned>(cmd.direction) | (op_differs ? kOpDiffers : 0) |
                                                (row_nonzero ? kRowNonzero : 0));
  buffer[0] = static_cast<std::uint8_t>(static_cast<unsigned>(cmd.kind) | (cmd.wait_count << 3) |
                                        (amount_differs ? kAmountDiffers : 0) | (second != 0 ? kSecondByte : 0));
  std::uint8_t* out = buffer + 1;
  if (second != 0) *out++ = second;
  if (op_differs) out = put_varint(out, zigzag(cmd.op, op_));
  if (amount_differs) out = put_varint(out, cmd.amount);
  if (row_nonzero) out = put_varint(out, cmd.row_bytes);
  for (std::uint8_t i = 0; i < cmd.wait_count; ++i) {
    const EngineId e = cmd.wait_engine[i];
    if (e >= kMaxEngines) throw std::logic_error("a command waits on an engine id beyond the chip's largest");
    out = put_varint(out, (zigzag(cmd.wait_id[i], ids_[e]) << kEngineBits) | e);
    ids_[e] = cmd.wait_id[i];
  }
  bytes_.commit(out);
  op_ = cmd.op;
  amount_ = cmd.amount;
  ++size_;
}

Command CommandQueue::operator[](std::size_t i) const {
  if (i >= size_) throw std::out_of_range("command index beyond its queue");
  const std::size_t first = i / kBlock * kBlock;
  return cached_entry<Command, kBlock>(id_, i, std::min(kBlock, size_ - first), [&](auto& out) {
    Reader r(*this, first);
    for (std::size_t k = 0; k < kBlock && !r.done(); ++k, r.next()) out[k] = *r;
  });
}

CommandQueue::Reader::Reader(const CommandQueue& queue, std::size_t from) : queue_(&queue), index_(from) {
  if (from >= queue.size_) {
    index_ = queue.size_;
    return;
  }
  seek_in_blocks(from, kBlock, queue.blocks_, index_, offset_, [this] { decode(); });
}

void CommandQueue::Reader::decode() {
  if (index_ % kBlock == 0) op_ = 0, amount_ = 0, ids_ = {};
  const std::uint8_t* at = queue_->bytes_.data() + offset_;
  const std::uint8_t* const begin = at;
  const std::uint8_t h0 = *at++;
  const std::uint8_t h1 = (h0 & kSecondByte) ? *at++ : 0;
  Command& c = current_;
  c.kind = static_cast<CommandKind>(h0 & 7);
  c.wait_count = static_cast<std::uint8_t>((h0 >> 3) & 7);
  c.direction = static_cast<Direction>(h1 & 7);
  if (h1 & kOpDiffers) op_ = unzigzag(read_varint(at), op_);
  c.op = op_;
  if (h0 & kAmountDiffers) amount_ = read_varint(at);
  c.amount = amount_;
  c.row_bytes = (h1 & kRowNonzero) ? static_cast<std::uint32_t>(read_varint(at)) : 0;
  c.wait_id = {};
  c.wait_engine = {};
  for (std::uint8_t i = 0; i < c.wait_count; ++i) {
    const std::uint64_t v = read_varint(at);
    const auto e = static_cast<EngineId>(v & ((1u << kEngineBits) - 1));
    c.wait_engine[i] = e;
    ids_[e] = unzigzag(v >> kEngineBits, ids_[e]);
    c.wait_id[i] = ids_[e];
  }
  offset_ += static_cast<std::size_t>(at - begin);
}

}  // namespace sim
