#include "base/buffer_stock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace flashpipe {
namespace {

TEST(BufferStockTest, ReusesAGivenBufferZeroed) {
  BufferStock stock(1 << 20);
  AlignedBuffer a = stock.Take(8192, 4096);
  std::memset(a.data(), 0xAB, a.size());
  uint8_t* p = a.data();
  stock.Give(std::move(a), 4096);
  EXPECT_EQ(stock.kept_bytes(), 8192u);
  AlignedBuffer b = stock.Take(8000, 4096);  // rounds up to the same 8192
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(stock.reused(), 1u);
  EXPECT_EQ(stock.kept_bytes(), 0u);
  EXPECT_TRUE(std::all_of(b.data(), b.data() + b.size(), [](uint8_t c) { return c == 0; }));
}

TEST(BufferStockTest, SizeAndAlignmentMustMatch) {
  BufferStock stock(1 << 20);
  stock.Give(AlignedBuffer(8192, 4096), 4096);
  AlignedBuffer other_size = stock.Take(4096, 4096);
  AlignedBuffer other_align = stock.Take(8192, 8192);
  EXPECT_EQ(stock.reused(), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(other_align.data()) % 8192, 0u);
  EXPECT_EQ(stock.kept_bytes(), 8192u);
}

TEST(BufferStockTest, KeepsNoMoreThanItsBound) {
  BufferStock stock(10000);
  stock.Give(AlignedBuffer(8192), 4096);
  stock.Give(AlignedBuffer(8192), 4096);  // would exceed: freed
  EXPECT_EQ(stock.kept_bytes(), 8192u);
  stock.Give(AlignedBuffer(), 4096);      // empty: ignored
  EXPECT_EQ(stock.kept_bytes(), 8192u);
}

}  // namespace
}  // namespace flashpipe
