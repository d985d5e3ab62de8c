#include "host/feed.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>

#include "base/units.h"

namespace flashpipe::host {
namespace {

constexpr auto kLagPoll = std::chrono::milliseconds(50);

}  // namespace

// The producer's side: a sending pass delivered into the window.
class Feed::Out : public RecordOut {
 public:
  explicit Out(Feed* f) : f_(f) {}

  Status OnShape(const ImageShape& shape) override {
    std::lock_guard lock(f_->mu_);
    f_->shape_ = shape;
    f_->cv_.notify_all();
    return Status::Ok();
  }

  Status OnPayload(std::span<const uint8_t> bytes) override {
    if (written_ < f_->start_payload_) {
      size_t skip = static_cast<size_t>(std::min<uint64_t>(bytes.size(), f_->start_payload_ - written_));
      written_ += skip;
      bytes = bytes.subspan(skip);
    }
    while (!bytes.empty()) {
      FP_ASSIGN_OR_RETURN(auto dst, f_->Space(bytes.size()));
      std::memcpy(dst.data(), bytes.data(), dst.size());
      FP_RETURN_IF_ERROR(CommitPayload(dst.size()));
      bytes = bytes.subspan(dst.size());
    }
    return Status::Ok();
  }

  std::span<uint8_t> PayloadSpace(size_t max) override {
    if (written_ < f_->start_payload_) return {};  // skipped: through OnPayload
    auto space = f_->Space(max);
    return space.ok() ? *space : std::span<uint8_t>();
  }

  Status CommitPayload(size_t n) override {
    std::lock_guard lock(f_->mu_);
    f_->filled_ += n;
    written_ += n;
    f_->cv_.notify_all();
    return Status::Ok();
  }

  Status OnRecord(const Record& r) override {
    uint64_t i = count_++;
    std::unique_lock lock(f_->mu_);
    if (f_->plan_) {
      const auto& planned = f_->plan_->records;
      if (i >= planned.size() || planned[i] != r) {
        return Corrupt(fmt::format("{}: the image changed since it was planned (record {} differs)", f_->spec_.path, i));
      }
    } else if (i >= f_->start_record_) {
      FP_RETURN_IF_ERROR(f_->WaitForRoom(lock, false));
      f_->records_.push_back(r);
    }
    f_->record_count_ = count_;
    f_->cv_.notify_all();
    return Status::Ok();
  }

  Status OnCrcChunk() override {
    if (f_->plan_ && !f_->plan_->crc_chunks) {
      return Corrupt(fmt::format("{}: the image changed since it was planned (a CRC32 chunk)", f_->spec_.path));
    }
    return Status::Ok();
  }

  uint64_t written() const { return written_; }
  uint64_t count() const { return count_; }

 private:
  Feed* f_;
  uint64_t written_ = 0;  // payload bytes of this pass, kept or not
  uint64_t count_ = 0;    // records of this pass
};

Feed::Feed(const ImageSpec& spec, std::shared_ptr<const ImagePlan> plan, const FeedOptions& options, size_t members,
           uint64_t start_record, uint64_t start_payload)
    : spec_(spec),
      plan_(std::move(plan)),
      options_(options),
      start_record_(start_record),
      start_payload_(start_payload),
      pool_size_(std::max<size_t>(2, options.window_bytes / options.buffer_bytes)),
      members_(members) {
  for (Member& m : members_) m.record_pos = start_record, m.payload_pos = start_payload;
  first_live_ = start_payload / options_.buffer_bytes;
  filled_ = start_payload;
  first_record_ = start_record;
  pool_.reserve(pool_size_);
}

std::shared_ptr<Feed> Feed::Start(const ImageSpec& spec, std::shared_ptr<const ImagePlan> plan,
                                  const FeedOptions& options, size_t members, uint64_t start_record,
                                  uint64_t start_payload) {
  std::shared_ptr<Feed> f(new Feed(spec, std::move(plan), options, members, start_record, start_payload));
  if (!f->plan_) {
    std::lock_guard lock(f->mu_);
    f->StartProducer();
  }
  return f;
}

void Feed::StartProducer() {
  if (!producer_.joinable()) producer_ = std::thread([this] { Produce(); });
}

Feed::~Feed() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (producer_.joinable()) producer_.join();
}

void Feed::Produce() {
  Out out(this);
  // An image planned without CRC32 chunks: its RAW bytes are not CRC'd.
  Status st = RunImagePass(spec_, true, &out, nullptr, !plan_ || plan_->crc_chunks);
  std::lock_guard lock(mu_);
  if (st.ok() && plan_ && (out.count() != plan_->records.size() || out.written() != plan_->payload_bytes)) {
    st = Corrupt(fmt::format("{}: the image changed since it was planned ({} records, {} payload bytes; planned {}, {})",
                             spec_.path, out.count(), out.written(), plan_->records.size(), plan_->payload_bytes));
  }
  if (!st.ok()) failed_ = Stopped() ? Cancelled("no device reads the image any more") : st;
  ended_ = true;
  cv_.notify_all();
}

bool Feed::Stopped() const {
  return stop_ || std::none_of(members_.begin(), members_.end(), [](const Member& m) { return m.holding; });
}

Result<std::span<uint8_t>> Feed::Space(size_t max) {
  std::unique_lock lock(mu_);
  const size_t b = options_.buffer_bytes;
  uint64_t k = filled_ / b;
  if (k == first_live_ + live_.size()) {
    FP_RETURN_IF_ERROR(WaitForRoom(lock, true));
    if (free_.empty()) {
      pool_.emplace_back(b);
      free_.push_back(pool_.back().data());
    }
    live_.push_back(free_.back());
    free_.pop_back();
  }
  uint8_t* buf = live_[k - first_live_];
  size_t in = filled_ % b;
  return std::span<uint8_t>(buf + in, std::min(max, b - in));
}

Status Feed::WaitForRoom(std::unique_lock<std::mutex>& lock, bool payload) {
  auto since = Clock::now();
  for (;;) {
    if (Stopped()) return Cancelled("no device reads the image any more");
    bool room = payload ? (!free_.empty() || pool_.size() < pool_size_ + lent_.size()) : records_.size() < options_.max_records;
    if (room) return Status::Ok();
    cv_.wait_for(lock, kLagPoll);
    auto now = Clock::now();
    CheckLag(payload, now - since);
    since = now;
  }
}

// Over each lag_limit period, how long the producer waited for room while a
// member waited for bytes: more than half of it, and the members that hold
// the oldest buffer (or record) are detached. A device that is only a
// little slower than the others keeps them waiting now and then, and is
// kept; one that holds them back most of the time goes on alone.
void Feed::CheckLag(bool payload, Clock::duration blocked) {
  auto now = Clock::now();
  bool someone_waits = std::any_of(members_.begin(), members_.end(), [](const Member& m) { return m.holding && m.waiting; });
  if (someone_waits) lag_blocked_ += blocked;
  if (now - lag_period_start_ < options_.lag_limit) return;
  bool lagging = lag_blocked_ * 2 >= options_.lag_limit;
  lag_period_start_ = now;
  lag_blocked_ = {};
  if (!lagging) return;
  const uint64_t oldest_end = (first_live_ + 1) * options_.buffer_bytes;
  for (Member& m : members_) {
    if (!m.holding || m.waiting) continue;
    bool holds = payload ? m.payload_pos < oldest_end : m.record_pos <= first_record_;
    if (!holds) continue;
    m.holding = false;
    m.detached = true;
    ++detach_count_;
  }
  GiveBack();
  cv_.notify_all();
}

void Feed::GiveBack() {
  const size_t b = options_.buffer_bytes;
  while (!live_.empty()) {
    uint64_t k = first_live_, end = (k + 1) * b;
    if (end > filled_) break;  // still being filled
    const auto pin = static_cast<int64_t>(k);
    bool needed = std::any_of(members_.begin(), members_.end(), [&](const Member& m) {
      return (m.pinned == pin && !m.detached) || (m.holding && m.payload_pos < end);
    });
    if (needed) break;
    // Read now only by detached members (stuck in a send, say): lent to
    // them until their next call, the window moves on.
    int readers = 0;
    for (Member& m : members_) {
      if (m.pinned == pin) {
        m.lent = live_.front();
        ++readers;
      }
    }
    if (readers > 0) {
      lent_.emplace_back(live_.front(), readers);
    } else {
      free_.push_back(live_.front());
    }
    live_.pop_front();
    ++first_live_;
  }
  uint64_t keep = record_count_;
  for (const Member& m : members_) {
    if (m.holding) keep = std::min(keep, m.record_pos);
  }
  while (!records_.empty() && first_record_ < keep) {
    records_.pop_front();
    ++first_record_;
  }
}

void Feed::Unpin(Member& me) {
  me.pinned = -1;
  me.payload_pos = std::max(me.payload_pos, me.consumed);
  if (me.lent == nullptr) return;
  auto it = std::find_if(lent_.begin(), lent_.end(), [&](const auto& l) { return l.first == me.lent; });
  me.lent = nullptr;
  if (it == lent_.end() || --it->second > 0) return;
  free_.push_back(it->first);
  lent_.erase(it);
}

Result<ImageShape> Feed::Shape(size_t m) {
  if (plan_) return plan_->shape;
  std::unique_lock lock(mu_);
  Member& me = members_[m];
  cv_.wait(lock, [&] { return shape_ || ended_ || me.detached; });
  if (shape_) return *shape_;
  if (me.detached) return Cancelled("detached");
  return failed_.ok() ? Corrupt(fmt::format("{}: no image", spec_.path)) : failed_;
}

Result<std::optional<Record>> Feed::RecordAt(size_t m, uint64_t index) {
  std::unique_lock lock(mu_);
  Member& me = members_[m];
  if (me.pinned >= 0) {
    Unpin(me);  // planning the next part: the last part's payload is sent
    GiveBack();
    cv_.notify_all();
  }
  if (plan_) {
    const auto& planned = plan_->records;
    return index < planned.size() ? std::optional<Record>(planned[index]) : std::nullopt;
  }
  if (me.detached) return Cancelled("detached");
  if (index < first_record_) return Internal(fmt::format("record {} was given back", index));
  me.waiting = true;
  cv_.wait(lock, [&] { return index < record_count_ || ended_ || me.detached || stop_; });
  me.waiting = false;
  if (me.detached) return Cancelled("detached");
  if (index < record_count_) return std::optional<Record>(records_[index - first_record_]);
  if (!failed_.ok()) return failed_;
  return std::optional<Record>();
}

Result<std::span<const uint8_t>> Feed::PayloadAt(size_t m, uint64_t offset, size_t max) {
  std::unique_lock lock(mu_);
  Member& me = members_[m];
  StartProducer();
  Unpin(me);
  if (me.detached) return Cancelled("detached");
  if (offset < me.payload_pos) return Internal(fmt::format("payload byte {} read again", offset));
  me.payload_pos = offset;
  GiveBack();
  cv_.notify_all();
  // Waits for all of what is asked up to the buffer's end (never past it,
  // where the producer may wait for room), so that spans are large.
  const size_t b = options_.buffer_bytes;
  const size_t in = offset % b;
  const uint64_t want = offset + std::min<uint64_t>(max, b - in);
  me.waiting = true;
  cv_.wait(lock, [&] { return filled_ >= want || ended_ || me.detached || stop_; });
  me.waiting = false;
  if (me.detached) return Cancelled("detached");
  if (filled_ <= offset) {
    if (!failed_.ok()) return failed_;
    return Corrupt(fmt::format("{}: payload ends at byte {}, before {}", spec_.path, filled_, offset));
  }
  uint64_t k = offset / b;
  if (k < first_live_) return Internal(fmt::format("payload byte {} was given back", offset));
  size_t n = static_cast<size_t>(std::min<uint64_t>({max, b - in, filled_ - offset}));
  if (plan_ && offset + n == plan_->payload_bytes) {
    // The last payload bytes of a planned image: not before the reading has
    // checked the rest of the file (a CRC32 chunk after them, its end).
    me.waiting = true;
    cv_.wait(lock, [&] { return ended_ || me.detached || stop_; });
    me.waiting = false;
    if (me.detached) return Cancelled("detached");
    if (!failed_.ok()) return failed_;
  }
  me.pinned = static_cast<int64_t>(k);
  me.consumed = offset + n;
  return std::span<const uint8_t>(live_[k - first_live_] + in, n);
}

void Feed::ReleaseRecords(size_t m, uint64_t index) {
  std::lock_guard lock(mu_);
  Member& me = members_[m];
  me.record_pos = std::max(me.record_pos, index);
  GiveBack();
  cv_.notify_all();
}

void Feed::Leave(size_t m) {
  std::lock_guard lock(mu_);
  Member& me = members_[m];
  me.holding = false;
  Unpin(me);
  GiveBack();
  cv_.notify_all();
}

bool Feed::detached(size_t m) const {
  std::lock_guard lock(mu_);
  return members_[m].detached;
}

size_t Feed::detach_count() const {
  std::lock_guard lock(mu_);
  return detach_count_;
}

size_t Feed::buffers_made() const {
  std::lock_guard lock(mu_);
  return pool_.size();
}

uint64_t Feed::max_part_bytes() const { return plan_ ? UINT64_MAX : options_.window_bytes / 2; }

uint32_t Feed::max_part_chunks() const { return static_cast<uint32_t>(std::min<size_t>(options_.max_records / 2, 1 << 16)); }

// --- Cursor -----------------------------------------------------------------

Cursor::Cursor(std::shared_ptr<Feed> feed, size_t member) : feed_(std::move(feed)), member_(member) {}

Cursor::~Cursor() { feed_->Leave(member_); }

Result<ImageShape> Cursor::Shape() {
  for (;;) {
    auto r = feed_->Shape(member_);
    if (r.ok()) return r;
    FP_RETURN_IF_ERROR(Reopen(r.status()));
  }
}

Result<std::optional<Record>> Cursor::At(uint64_t index) {
  for (;;) {
    auto r = feed_->RecordAt(member_, index);
    if (r.ok()) return r;
    FP_RETURN_IF_ERROR(Reopen(r.status()));
  }
}

Result<std::span<const uint8_t>> Cursor::Payload(uint64_t offset, size_t max) {
  payload_pos_ = offset;
  for (;;) {
    auto r = feed_->PayloadAt(member_, offset, max);
    if (r.ok()) return r;
    FP_RETURN_IF_ERROR(Reopen(r.status()));
  }
}

Result<FileSpan> Cursor::PayloadFile(uint64_t offset, uint64_t max) {
  const ImagePlan& plan = *feed_->plan();
  if (!file_.valid()) {
    const std::string& path = feed_->spec().path;
    file_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!file_.valid()) return ErrnoError(fmt::format("cannot open image {}", path));
    FP_ASSIGN_OR_RETURN(FileStamp now, StampOfFd(file_.get(), path));
    if (now != plan.stamp) return Corrupt(fmt::format("{}: the image changed since it was planned", path));
    feed_->Leave(member_);  // the shared window need not wait for this one
  }
  const auto& x = plan.payload_in_file;
  auto it = std::upper_bound(x.begin(), x.end(), offset, [](uint64_t o, const FileExtent& e) { return o < e.payload; });
  if (it == x.begin() || offset >= std::prev(it)->payload + std::prev(it)->size) {
    return Internal(fmt::format("payload byte {} is not in the image file", offset));
  }
  const FileExtent& e = *std::prev(it);
  return FileSpan{file_.get(), e.file + (offset - e.payload), std::min(max, e.payload + e.size - offset)};
}

void Cursor::PartStart(const Position& begin) {
  record_pos_ = begin.record;
  feed_->ReleaseRecords(member_, begin.record);
}

Status Cursor::Reopen(const Status& failed) {
  if (!feed_->detached(member_)) return failed;
  const FeedOptions& o = feed_->options();
  if (!Rereadable(feed_->spec())) {
    return Cancelled(fmt::format("fell behind the other devices (they waited {} ms for it with the {} window full); "
                                 "{} cannot be read again for it: flash from a file, or give a larger --window",
                                 o.lag_limit.count(), FormatBytes(o.window_bytes),
                                 feed_->spec().path == "-" ? "stdin" : feed_->spec().path));
  }
  FeedOptions mine = o;
  mine.window_bytes = o.private_window_bytes;
  auto fresh = Feed::Start(feed_->spec(), feed_->plan(), mine, 1, record_pos_, payload_pos_);
  feed_->Leave(member_);
  feed_ = std::move(fresh);
  member_ = 0;
  reopened_ = true;
  return Status::Ok();
}

}  // namespace flashpipe::host
