#include "base/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace flashpipe {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
  bool started = false;
  ~Impl() { EVP_MD_CTX_free(ctx); }
  void Start() {
    // Both fail only when out of memory: nothing sensible is left to do.
    if (ctx == nullptr) ctx = EVP_MD_CTX_new();
    if (ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
      std::fputs("flashpipe: OpenSSL cannot start a SHA-256\n", stderr);
      std::abort();
    }
    started = true;
  }
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::Update(std::span<const uint8_t> data) {
  if (!impl_->started) impl_->Start();
  EVP_DigestUpdate(impl_->ctx, data.data(), data.size());
}

void Sha256::UpdateZeros(uint64_t count) {
  static const uint8_t kZeros[64 << 10] = {};
  while (count > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(count, sizeof kZeros));
    Update(std::span<const uint8_t>(kZeros, n));
    count -= n;
  }
}

Sha256::Digest Sha256::Final() {
  if (!impl_->started) impl_->Start();
  Digest out{};
  unsigned int size = 0;
  EVP_DigestFinal_ex(impl_->ctx, out.data(), &size);
  impl_->started = false;
  return out;
}

std::string Sha256::Hex(const Digest& digest) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(digest.size() * 2);
  for (uint8_t b : digest) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace flashpipe
