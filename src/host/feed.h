// Feed: one reading of one image, shared by every device it is flashed to.
//
// A producer thread runs a sending pass over the image (image_pass.h) into a
// window: a fixed pool of buffers holding the payload stream and, for an
// image not planned ahead, a queue of its records. Each device reads through
// a member: records by index (from the plan, or from the queue as they come)
// and payload by offset, in order; whatever every member has passed goes
// back to the pool. Memory is the pool (window_bytes) and the record queue
// (max_records), whatever the image's size or the number of devices. For a
// planned image the sending pass is checked against the plan record by
// record, so a file that changes between the passes fails rather than
// sending parts that do not match their announced size.
//
// A device that falls behind: when, over a lag_limit period, the producer
// waited for room more than half of the time while another member waited
// for bytes, the members that hold the oldest buffer (or record) are
// detached: the window goes on without them. A Cursor whose member was detached reopens the image and reads the
// rest on its own (a private Feed of one member that keeps nothing before
// where the member was), so a slow device neither stalls the others nor
// fails; an image that cannot be read again (stdin, a pipe) cannot be
// reopened, and such a device fails with an error that says why. A device
// stuck inside a send keeps the span it holds: the buffer leaves the window
// with it (lent until that member's next call) and the pool grows by one,
// so the others go on. Members
// are registered when the feed starts, one per device expected; a device
// that will not come leaves at once, one that comes late is a member that
// fell behind.
//
// A planned image's producer starts with the first payload a member asks
// for, so a feed whose members all read the image file (Cursor::
// PayloadFile, for transports that send files) reads no payload at all.
//
// Thread-safe: one producer thread, each member used by one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "host/image_pass.h"
#include "host/part_plan.h"
#include "host/part_writer.h"

namespace flashpipe::host {

struct FeedOptions {
  uint64_t window_bytes = 32 << 20;
  size_t buffer_bytes = 1 << 20;
  size_t max_records = 1 << 18;
  std::chrono::milliseconds lag_limit{3000};
  // The window of a device that reads on its own (reopened).
  uint64_t private_window_bytes = 8 << 20;
  // Whether a member whose output sends files reads a planned image's
  // payload from the file (Cursor::PayloadFile) rather than the window.
  bool send_files = true;
};

class Feed {
 public:
  // `plan`: the image's planning pass, or null (records come with this
  // pass). Records before `start_record` and payload before
  // `start_payload` are read but not kept.
  static std::shared_ptr<Feed> Start(const ImageSpec& spec, std::shared_ptr<const ImagePlan> plan,
                                     const FeedOptions& options, size_t members, uint64_t start_record = 0,
                                     uint64_t start_payload = 0);
  ~Feed();
  Feed(const Feed&) = delete;
  Feed& operator=(const Feed&) = delete;

  // The calls of member `m`. They wait for what is not read yet; Cancelled
  // once the member was detached (detached(m)).
  Result<ImageShape> Shape(size_t m);
  Result<std::optional<Record>> RecordAt(size_t m, uint64_t index);
  // Payload before `offset` is given back; the span stays valid until the
  // member's next call.
  Result<std::span<const uint8_t>> PayloadAt(size_t m, uint64_t offset, size_t max);
  // Records before `index` are given back (a part writer re-reads a part's
  // records, so a member gives them back part by part).
  void ReleaseRecords(size_t m, uint64_t index);
  void Leave(size_t m);
  bool detached(size_t m) const;

  const ImageSpec& spec() const { return spec_; }
  const std::shared_ptr<const ImagePlan>& plan() const { return plan_; }
  const FeedOptions& options() const { return options_; }
  // The largest part a member may plan: its records must fit the window
  // when they are read as it plans (unplanned images).
  uint64_t max_part_bytes() const;
  uint32_t max_part_chunks() const;
  // Members detached so far, and buffers ever made (for reports and tests).
  size_t detach_count() const;
  size_t buffers_made() const;

 private:
  class Out;
  struct Member {
    bool holding = true;  // counts for giving buffers back
    bool detached = false;
    bool waiting = false;  // for bytes or records not read yet
    uint64_t record_pos = 0, payload_pos = 0;
    int64_t pinned = -1;        // buffer index of the last span handed out
    uint64_t consumed = 0;      // the end of that span
    uint8_t* lent = nullptr;    // that buffer, left the window while pinned (detached)
  };
  Feed(const ImageSpec& spec, std::shared_ptr<const ImagePlan> plan, const FeedOptions& options, size_t members,
       uint64_t start_record, uint64_t start_payload);
  void Produce();
  // Under mu_: the producer, started for a planned image when a member
  // first asks for payload (members that read the file need none).
  void StartProducer();
  // Under mu_.
  void GiveBack();
  bool Stopped() const;
  using Clock = std::chrono::steady_clock;
  Status WaitForRoom(std::unique_lock<std::mutex>& lock, bool payload);
  void CheckLag(bool payload, Clock::duration blocked);
  // Under mu_: the member's span is given back (and a lent buffer with it).
  void Unpin(Member& me);
  // Room for up to `max` payload bytes at filled_ (producer).
  Result<std::span<uint8_t>> Space(size_t max);

  const ImageSpec spec_;
  const std::shared_ptr<const ImagePlan> plan_;
  const FeedOptions options_;
  const uint64_t start_record_, start_payload_;
  const size_t pool_size_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Member> members_;
  std::optional<ImageShape> shape_;
  std::vector<AlignedBuffer> pool_;
  std::vector<uint8_t*> free_;
  std::deque<uint8_t*> live_;  // buffers first_live_, first_live_ + 1, ...
  // Buffers that left the window while a detached member still read them
  // (a device stuck in a send): each with its readers; the pool may grow by
  // as many, so the window goes on without them.
  std::vector<std::pair<uint8_t*, int>> lent_;
  uint64_t first_live_ = 0;
  uint64_t filled_ = 0;        // payload bytes read
  std::deque<Record> records_;  // unplanned images: records first_record_, ...
  uint64_t first_record_ = 0;
  uint64_t record_count_ = 0;  // records read
  bool ended_ = false;
  Status failed_;
  bool stop_ = false;
  Clock::time_point lag_period_start_ = Clock::now();
  Clock::duration lag_blocked_{};
  size_t detach_count_ = 0;
  std::thread producer_;
};

// One device's reading of an image: a member of a shared Feed, switched to
// a private Feed of its own if it is detached. The RecordSource and
// PayloadSource a part planner and writer read.
class Cursor : public RecordSource, public PayloadSource {
 public:
  Cursor(std::shared_ptr<Feed> feed, size_t member);
  ~Cursor() override;
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;

  Result<ImageShape> Shape();
  Result<std::optional<Record>> At(uint64_t index) override;
  Result<std::span<const uint8_t>> Payload(uint64_t offset, size_t max) override;
  // A planned image whose payload lies in its file (ImagePlan::
  // payload_in_file): a writer that sends files reads it here, from the
  // image file, and the member leaves the shared window at its first span.
  bool in_file() const override {
    return feed_->options().send_files && feed_->plan() && !feed_->plan()->payload_in_file.empty();
  }
  Result<FileSpan> PayloadFile(uint64_t offset, uint64_t max) override;
  // Called as each part starts: records before it are not needed again.
  void PartStart(const Position& begin);
  uint64_t max_part_bytes() const { return feed_->max_part_bytes(); }
  uint32_t max_part_chunks() const { return feed_->max_part_chunks(); }
  bool planned() const { return feed_->plan() != nullptr; }
  // Whether it reads on its own now (it fell behind, or was opened alone).
  bool reopened() const { return reopened_; }

 private:
  // After a call failed: reopens when the member was detached.
  Status Reopen(const Status& failed);

  std::shared_ptr<Feed> feed_;
  size_t member_;
  bool reopened_ = false;
  uint64_t record_pos_ = 0, payload_pos_ = 0;
  UniqueFd file_;  // the image, for PayloadFile
};

}  // namespace flashpipe::host
