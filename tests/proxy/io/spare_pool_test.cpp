// One event loop's spare objects (its body buffers here): a lease's object comes back to the
// pool when the lease ends and is lent again, last given back first, recycled; the pool holds
// as many as were lent at once in its last two periods, within its floor and its cap.
#include "proxy/io/spare_pool.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace sluice::io {
namespace {

TEST(ChunkPool, LendsWholeChunksAndTakesThemBack) {
  ChunkPool pool(4, 4);
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
  ChunkPool pool(4, 4);
  const ChunkPool::Lease a = pool.borrow();
  const ChunkPool::Lease b = pool.borrow();
  EXPECT_NE(a->data(), b->data());
}

TEST(ChunkPool, HoldsAtMostItsCapLastInFirstOut) {
  ChunkPool pool(1, 2);
  std::optional<ChunkPool::Lease> a(pool.borrow());
  std::optional<ChunkPool::Lease> b(pool.borrow());
  std::optional<ChunkPool::Lease> c(pool.borrow());
  char* const b_bytes = (*b)->data();
  char* const c_bytes = (*c)->data();
  a.reset();  // b and c are still out: two held, the cap; a is freed
  b.reset();
  c.reset();
  EXPECT_EQ(pool.spares(), 2u);
  const ChunkPool::Lease first = pool.borrow();
  const ChunkPool::Lease second = pool.borrow();
  EXPECT_EQ(first->data(), c_bytes);  // the last given back first
  EXPECT_EQ(second->data(), b_bytes);
}

TEST(ChunkPool, AMovedLeaseGivesItsChunkBackOnce) {
  ChunkPool pool(4, 4);
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
  SparePool<Recyclable> pool(1, 1);
  std::optional<SparePool<Recyclable>::Lease> kept(pool.borrow());
  std::optional<SparePool<Recyclable>::Lease> freed(pool.borrow());
  Recyclable* const kept_item = &**kept;
  EXPECT_EQ(kept_item->recycled, 0);
  freed.reset();  // the other is still out, so the cap is reached: destroyed, not recycled
  kept.reset();
  EXPECT_EQ(pool.spares(), 1u);
  const SparePool<Recyclable>::Lease again = pool.borrow();
  EXPECT_EQ(&*again, kept_item);
  EXPECT_EQ(again->recycled, 1);
  EXPECT_EQ(pool.spares(), 0u);
}

/// Lends `count` objects at once, then takes them all back.
void lend_at_once(SparePool<Recyclable>& pool, std::size_t count) {
  std::vector<SparePool<Recyclable>::Lease> leases;
  for (std::size_t i = 0; i < count; ++i) {
    leases.push_back(pool.borrow());
  }
}

TEST(SparePool, KeepsAsManyAsWereLentAtOnceUpToItsCap) {
  SparePool<Recyclable> pool(2, 100);
  lend_at_once(pool, 40);
  EXPECT_EQ(pool.spares(), 40u);  // the next 40 calls at once allocate nothing
  lend_at_once(pool, 40);
  EXPECT_EQ(pool.spares(), 40u);

  SparePool<Recyclable> capped(2, 10);
  lend_at_once(capped, 40);
  EXPECT_EQ(capped.spares(), 10u);
}

TEST(SparePool, ABurstsSparesGoAtTheEndOfAPeriodWithoutIt) {
  SparePool<Recyclable> pool(3, 100);
  lend_at_once(pool, 50);
  pool.trim();  // the period that saw the burst ends: its spares stay for the next
  EXPECT_EQ(pool.spares(), 50u);
  pool.trim();  // a period without it: down to the floor
  EXPECT_EQ(pool.spares(), 3u);
  pool.trim();
  EXPECT_EQ(pool.spares(), 3u);
}

TEST(SparePool, SteadyUseKeepsItsSparesAcrossPeriods) {
  SparePool<Recyclable> pool(1, 100);
  for (int period = 0; period < 5; ++period) {
    lend_at_once(pool, 30);
    pool.trim();
    EXPECT_EQ(pool.spares(), 30u) << "period " << period;
  }
}

TEST(SparePool, CountsWhatIsStillLentAgainstWhatItHolds) {
  SparePool<Recyclable> pool(1, 100);
  lend_at_once(pool, 20);
  {
    std::vector<SparePool<Recyclable>::Lease> held;
    for (int i = 0; i < 8; ++i) {
      held.push_back(pool.borrow());
    }
    EXPECT_EQ(pool.spares(), 12u);
    pool.trim();  // 20 at once in the period that ends: 8 lent and 12 spare stay
    EXPECT_EQ(pool.spares(), 12u);
    pool.trim();  // 8 at once since: 8 lent, no spare
    EXPECT_EQ(pool.spares(), 0u);
  }
  EXPECT_EQ(pool.spares(), 8u);  // all 8 given back are kept
}

}  // namespace
}  // namespace sluice::io
