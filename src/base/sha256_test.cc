#include "base/sha256.h"

#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <vector>

namespace flashpipe {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

std::string HexOf(std::span<const uint8_t> data) {
  Sha256 h;
  h.Update(data);
  return Sha256::Hex(h.Final());
}

TEST(Sha256Test, KnownValues) {  // FIPS 180-2 examples
  EXPECT_EQ(HexOf({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HexOf(Bytes("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HexOf(Bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, SlicesChainLikeOneStream) {
  std::mt19937 rng(7);
  std::vector<uint8_t> v(300001);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  std::string whole = HexOf(v);
  Sha256 h;
  size_t at = 0;
  for (size_t step = 1; at < v.size(); step = step * 3 + 1) {
    size_t n = std::min(step, v.size() - at);
    h.Update(std::span(v).subspan(at, n));
    at += n;
  }
  EXPECT_EQ(Sha256::Hex(h.Final()), whole);
}

TEST(Sha256Test, ZerosAsIfUpdated) {
  std::vector<uint8_t> v(200000, 0);
  v[0] = 1;
  Sha256 h;
  h.Update(std::span(v).first(1));
  h.UpdateZeros(v.size() - 1);
  EXPECT_EQ(Sha256::Hex(h.Final()), HexOf(v));
}

TEST(Sha256Test, FinalStartsANewStream) {
  Sha256 h;
  h.Update(Bytes("xyz"));
  (void)h.Final();
  h.Update(Bytes("abc"));
  EXPECT_EQ(Sha256::Hex(h.Final()), HexOf(Bytes("abc")));
  EXPECT_EQ(Sha256::Hex(h.Final()), HexOf({}));
}

}  // namespace
}  // namespace flashpipe
