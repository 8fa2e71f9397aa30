#include "sim/record_queue.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/compact_storage.hpp"

namespace sim {

void RecordQueue::start(std::size_t index, Tick t) {
  if (index != started_) throw std::logic_error("records start in queue order");
  const std::size_t pending = started_ - encoded_;
  if (pending == window_.size()) {
    // Grow the ring (a power of two), keeping the pending records in order.
    std::vector<Pending> grown(window_.empty() ? 8 : window_.size() * 2);
    for (std::size_t k = 0; k < pending; ++k) grown[k] = window_[(head_ + k) & (window_.size() - 1)];
    window_ = std::move(grown);
    head_ = 0;
  }
  window_[(head_ + pending) & (window_.size() - 1)] = Pending{t, 0, false};
  ++started_;
}

void RecordQueue::finish(std::size_t index, Tick t) {
  if (index < encoded_ || index >= started_) throw std::logic_error("a record finishes once, after it starts");
  Pending& p = window_[(head_ + (index - encoded_)) & (window_.size() - 1)];
  p.end = t;
  p.finished = true;
  while (encoded_ < started_ && window_[head_].finished) {
    encode(CommandRecord{window_[head_].start, window_[head_].end});
    head_ = (head_ + 1) & (window_.size() - 1);
  }
}

namespace {
constexpr unsigned kLiteral = RecentDurations::kSize, kEscape = kLiteral + 1;
constexpr std::uint64_t kShiftable = std::uint64_t{1} << 59;  // a zigzag below this shifts by 4 safely
}  // namespace

void RecordQueue::encode(const CommandRecord& r) {
  if (encoded_ % kBlock == 0) {
    blocks_.push_back(bytes_.size());
    end_ = 0;
    recent_ = {};
  }
  const std::uint64_t gap = zigzag64(static_cast<std::int64_t>(r.start - end_));
  const Tick duration = r.end - r.start;
  std::uint8_t* out = bytes_.room(30);
  if (gap >= kShiftable) {
    out = put_varint(put_varint(put_varint(out, kEscape), gap), duration);
    recent_.use(RecentDurations::kSize, duration);
  } else {
    const unsigned at = recent_.find(duration);
    out = put_varint(out, (gap << 4) | (at < RecentDurations::kSize ? at : kLiteral));
    if (at == RecentDurations::kSize) out = put_varint(out, duration);
    recent_.use(at, duration);
  }
  bytes_.commit(out);
  end_ = r.end;
  ++encoded_;
}

CommandRecord RecordQueue::operator[](std::size_t i) const {
  if (i >= started_) throw std::out_of_range("record index beyond its queue");
  if (i >= encoded_) return *Reader(*this, i);  // in the window: read as it is
  // Encoded blocks never change once full; a partial one is decoded again after it grows.
  const std::size_t first = i / kBlock * kBlock;
  return cached_entry<CommandRecord, kBlock>(id_, i, std::min(kBlock, encoded_ - first), [&](auto& out) {
    Reader r(*this, first);
    for (std::size_t k = 0; k < kBlock && r.position() < encoded_; ++k, r.next()) out[k] = *r;
  });
}

RecordQueue::Reader::Reader(const RecordQueue& queue, std::size_t from) : queue_(&queue), index_(from) {
  if (from >= queue.started_) {
    index_ = queue.started_;
    return;
  }
  if (from >= queue.encoded_) {
    decode();
    return;
  }
  seek_in_blocks(from, kBlock, queue.blocks_, index_, offset_, [this] { decode(); });
}

void RecordQueue::Reader::decode() {
  const RecordQueue& q = *queue_;
  if (index_ >= q.encoded_) {  // still in the window
    const Pending& p = q.window_[(q.head_ + (index_ - q.encoded_)) & (q.window_.size() - 1)];
    current_ = CommandRecord{p.start, p.finished ? p.end : 0};
    return;
  }
  if (index_ % kBlock == 0) end_ = 0, recent_ = {};
  std::size_t at = offset_;
  const std::uint64_t v = get_varint(q.bytes_.data(), at);
  const unsigned code = static_cast<unsigned>(v & 15);
  std::uint64_t gap = v >> 4;
  Tick duration = 0;
  if (code == kEscape) {
    gap = get_varint(q.bytes_.data(), at);
    duration = get_varint(q.bytes_.data(), at);
    recent_.use(RecentDurations::kSize, duration);
  } else if (code == kLiteral) {
    duration = get_varint(q.bytes_.data(), at);
    recent_.use(RecentDurations::kSize, duration);
  } else {
    duration = recent_.d[code];
    recent_.use(code, duration);
  }
  const Tick start = end_ + static_cast<Tick>(unzigzag64(gap));
  const Tick end = start + duration;
  offset_ = at;
  end_ = end;
  current_ = CommandRecord{start, end};
}

}  // namespace sim
