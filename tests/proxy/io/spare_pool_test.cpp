// The body buffers of one event loop: a lease's buffer comes back to the pool when the lease
// ends and is lent again, last given back first, and the pool keeps no more than it may.
#include "proxy/io/chunk_pool.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <utility>

namespace sluice::io {
namespace {

TEST(ChunkPool, LendsWholeChunksAndTakesThemBack) {
  ChunkPool pool(4);
  char* first = nullptr;
  {
    const ChunkPool::Lease lease = pool.borrow();
    EXPECT_EQ(lease.bytes().size(), ChunkPool::kChunkBytes);
    first = lease.bytes().data();
    lease.bytes()[ChunkPool::kChunkBytes - 1] = 'x';  // all of it is usable
  }
  const ChunkPool::Lease again = pool.borrow();
  EXPECT_EQ(again.bytes().data(), first);  // recycled, not allocated anew
}

TEST(ChunkPool, LeasesAtOnceHaveTheirOwnChunks) {
  ChunkPool pool(4);
  const ChunkPool::Lease a = pool.borrow();
  const ChunkPool::Lease b = pool.borrow();
  EXPECT_NE(a.bytes().data(), b.bytes().data());
}

TEST(ChunkPool, KeepsAtMostMaxKeptSpareChunksLastInFirstOut) {
  ChunkPool pool(2);
  std::optional<ChunkPool::Lease> a(pool.borrow());
  std::optional<ChunkPool::Lease> b(pool.borrow());
  std::optional<ChunkPool::Lease> c(pool.borrow());
  char* const a_bytes = a->bytes().data();
  char* const b_bytes = b->bytes().data();
  a.reset();
  b.reset();
  c.reset();  // a third spare: freed, not kept
  const ChunkPool::Lease first = pool.borrow();
  const ChunkPool::Lease second = pool.borrow();
  EXPECT_EQ(first.bytes().data(), b_bytes);  // had c been kept, it would come first
  EXPECT_EQ(second.bytes().data(), a_bytes);
}

TEST(ChunkPool, AMovedLeaseGivesItsChunkBackOnce) {
  ChunkPool pool(4);
  char* bytes = nullptr;
  {
    ChunkPool::Lease lease = pool.borrow();
    bytes = lease.bytes().data();
    const ChunkPool::Lease moved(std::move(lease));
    EXPECT_EQ(moved.bytes().data(), bytes);
  }
  const ChunkPool::Lease first = pool.borrow();
  const ChunkPool::Lease second = pool.borrow();
  EXPECT_EQ(first.bytes().data(), bytes);
  EXPECT_NE(second.bytes().data(), bytes);  // not given back twice
}

}  // namespace
}  // namespace sluice::io
