// What a connection borrows while it serves requests: given back to the pool, it forgets the
// request and lets go of storage a large one made grow, but keeps the usual.
#include "proxy/http/request_state.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::http {
namespace {

TEST(RequestState, RecycledForgetsTheRequestAndKeepsOnlyUsualStorage) {
  RequestStatePool pool(1, 1);
  RequestState* kept = nullptr;
  {
    const RequestStatePool::Lease lease = pool.borrow();
    kept = &*lease;
    lease->buffer.commit(boost::asio::buffer_copy(lease->buffer.prepare(12000),
                                                  boost::asio::buffer(std::string(12000, 'x'))));
    EXPECT_GE(lease->buffer.capacity(), 12000u);
    lease->parser.emplace(lease->request_head);
  }
  const RequestStatePool::Lease again = pool.borrow();
  ASSERT_EQ(&*again, kept);
  EXPECT_EQ(again->buffer.size(), 0u);
  EXPECT_LE(again->buffer.capacity(), RequestState::kKeptBufferBytes);
  EXPECT_FALSE(again->parser.has_value());
  EXPECT_LE(again->request_head.storage_bytes(), 2 * HeadFields::kKeptTextBytes);
}

TEST(RequestState, MakesItsOwnAnswerOnFirstUseAndKeepsIt) {
  RequestStatePool pool(1, 1);
  const OwnResponse* made = nullptr;
  {
    const RequestStatePool::Lease lease = pool.borrow();
    EXPECT_EQ(lease->own_response, nullptr);  // a relayed request never needs one
    made = &lease->own();
    EXPECT_EQ(&lease->own(), made);
  }
  const RequestStatePool::Lease again = pool.borrow();
  EXPECT_EQ(again->own_response.get(), made);  // kept for the next answer: no allocation
}

TEST(RequestState, RecycledKeepsAnUsualBuffer) {
  RequestStatePool pool(1, 1);
  const void* storage = nullptr;
  {
    const RequestStatePool::Lease lease = pool.borrow();
    lease->buffer.commit(boost::asio::buffer_copy(lease->buffer.prepare(512),
                                                  boost::asio::buffer(std::string(100, 'x'))));
    storage = lease->buffer.data().data();
  }
  const RequestStatePool::Lease again = pool.borrow();
  EXPECT_EQ(again->buffer.size(), 0u);
  EXPECT_EQ(again->buffer.prepare(1).data(), storage);  // no new allocation
}

}  // namespace
}  // namespace sluice::http
