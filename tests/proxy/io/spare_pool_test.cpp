// One event loop's spare objects (its body buffers here): a lease's object comes back to the
// pool when the lease ends and is lent again, last given back first, recycled, and the pool
// keeps no more than it may.
#include "proxy/io/spare_pool.hpp"

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
    EXPECT_EQ(lease->size(), kChunkBytes);
    first = lease->data();
    (*lease)[kChunkBytes - 1] = 'x';  // all of it is usable
  }
  const ChunkPool::Lease again = pool.borrow();
  EXPECT_EQ(again->data(), first);  // recycled, not allocated anew
}

TEST(ChunkPool, LeasesAtOnceHaveTheirOwnChunks) {
  ChunkPool pool(4);
  const ChunkPool::Lease a = pool.borrow();
  const ChunkPool::Lease b = pool.borrow();
  EXPECT_NE(a->data(), b->data());
}

TEST(ChunkPool, KeepsAtMostMaxKeptSpareChunksLastInFirstOut) {
  ChunkPool pool(2);
  std::optional<ChunkPool::Lease> a(pool.borrow());
  std::optional<ChunkPool::Lease> b(pool.borrow());
  std::optional<ChunkPool::Lease> c(pool.borrow());
  char* const a_bytes = (*a)->data();
  char* const b_bytes = (*b)->data();
  a.reset();
  b.reset();
  c.reset();  // a third spare: freed, not kept
  const ChunkPool::Lease first = pool.borrow();
  const ChunkPool::Lease second = pool.borrow();
  EXPECT_EQ(first->data(), b_bytes);  // had c been kept, it would come first
  EXPECT_EQ(second->data(), a_bytes);
}

TEST(ChunkPool, AMovedLeaseGivesItsChunkBackOnce) {
  ChunkPool pool(4);
  char* bytes = nullptr;
  {
    ChunkPool::Lease lease = pool.borrow();
    bytes = lease->data();
    const ChunkPool::Lease moved(std::move(lease));
    EXPECT_EQ(moved->data(), bytes);
  }
  const ChunkPool::Lease first = pool.borrow();
  const ChunkPool::Lease second = pool.borrow();
  EXPECT_EQ(first->data(), bytes);
  EXPECT_NE(second->data(), bytes);  // not given back twice
}

/// Counts its recycling, as RequestState trims its buffers.
struct Recyclable {
  int recycled = 0;
  void recycle() noexcept { ++recycled; }
};

TEST(SparePool, RecyclesWhatItKeepsAndOnlyThat) {
  SparePool<Recyclable> pool(1);
  std::optional<SparePool<Recyclable>::Lease> kept(pool.borrow());
  std::optional<SparePool<Recyclable>::Lease> freed(pool.borrow());
  Recyclable* const kept_item = &**kept;
  EXPECT_EQ(kept_item->recycled, 0);
  kept.reset();
  freed.reset();  // over max_kept: destroyed without being recycled
  EXPECT_EQ(pool.spares(), 1u);
  const SparePool<Recyclable>::Lease again = pool.borrow();
  EXPECT_EQ(&*again, kept_item);
  EXPECT_EQ(again->recycled, 1);
  EXPECT_EQ(pool.spares(), 0u);
}

}  // namespace
}  // namespace sluice::io
