// libFuzzer target for the host side's reading of a fastboot device's
// answers (issue 19): the input, split at '\n', is what a hostile device
// answers, one response per line (a missing one is a timeout), to the
// questions `flash` asks (max-download-size, slot-count, has-slot,
// current-slot, is-logical, partition-size), a download of 4096 bytes, an
// oem digest with its INFO lines, and a --verify of two ranges (oem digest,
// else max-fetch-size and fetch: read-back; the data phase's bytes are
// zeros).
// Checks: no crash, no unbounded memory, and the promises: a download that
// succeeds sent exactly its size; the names a partition stands for are the
// name itself or NAME_<suffix>; an oem digest is empty or 64 characters; a
// verify that succeeds either used a method or says why it could not; a
// read-back never reads more than the ranges hold.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <span>
#include <string>
#include <string_view>

#include "host/device_session.h"
#include "host/fastboot_client.h"
#include "host/verify.h"

namespace {

using namespace flashpipe;
using namespace flashpipe::host;

void Check(bool ok) {
  if (!ok) std::abort();
}

class FuzzTransport : public Transport {
 public:
  explicit FuzzTransport(std::deque<std::string> answers) : answers_(std::move(answers)) {}
  Status Send(std::string_view) override { return Status::Ok(); }
  Result<std::string> Receive() override {
    if (answers_.empty()) return Status(Code::kTimedOut, "no response");
    std::string a = std::move(answers_.front());
    answers_.pop_front();
    if (a.size() > 64) return ProtocolError("a response of more than 64 bytes");  // as the TCP transport
    return a;
  }
  Status SendData(std::span<const std::span<const uint8_t>> pieces) override {
    for (auto p : pieces) sent_ += p.size();
    return Status::Ok();
  }
  Status ReceiveData(std::span<uint8_t> buf) override {
    std::fill(buf.begin(), buf.end(), 0);
    received_ += buf.size();
    return Status::Ok();
  }
  std::string name() const override { return "fuzz"; }
  uint64_t sent_ = 0, received_ = 0;

 private:
  std::deque<std::string> answers_;
};

class Out : public DataOut {
 public:
  explicit Out(Transport& t) : t_(t) {}
  Status Send(std::span<const std::span<const uint8_t>> pieces) override { return t_.SendData(pieces); }

 private:
  Transport& t_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 16) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::deque<std::string> answers;
  for (size_t start = 0; start <= in.size();) {
    size_t nl = in.find('\n', start);
    answers.emplace_back(in.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  auto transport = std::make_unique<FuzzTransport>(answers);
  FuzzTransport* t = transport.get();
  DeviceSession s(std::move(transport), [](std::string_view) {});
  (void)s.MaxDownloadSize();
  (void)s.SlotCount();
  auto names = s.Partitions("boot", "", nullptr);
  if (names.ok()) {
    for (const auto& n : *names) Check(n == "boot" || (n.size() >= 6 && n.starts_with("boot_")));
  }
  (void)s.IsLogical("system");
  (void)s.PartitionSize("system");
  (void)s.CurrentSlot();
  const uint64_t before = t->sent_;
  Status st = s.client().Download(4096, [&](DataOut&) {
    Out out(*t);
    static const uint8_t zeros[4096] = {};
    std::span<const uint8_t> piece(zeros);
    return out.Send({&piece, 1});
  });
  if (st.ok()) Check(t->sent_ - before == 4096);
  std::vector<std::string> info;
  auto digest = s.client().Command("oem digest system", &info);
  if (digest.ok()) {
    std::string d = DigestFromInfo(info);
    Check(d.empty() || d.size() == 64);
  }
  // Two ranges of zeros (their digests), as the image would define them.
  const std::string zeros8k = "9f1dcbc35c350d6027f98be0f5c8b43b42ca52b7604459c0c42be3aa88913d47";
  std::vector<DigestRange> ranges{{0, 8192, zeros8k}, {1 << 20, 8192, zeros8k}};
  VerifyResult how;
  st = VerifyOnDevice(s.client(), "system", ranges, &how);
  if (st.ok()) Check(!how.method.empty() != !how.unavailable.empty());
  Check(t->received_ <= 2 * 8192);
  return 0;
}
