// Redis Cluster's key slots and slot map, against the values Redis itself gives.
#include "proxy/store/redis/cluster_slots.hpp"

#include <gtest/gtest.h>

#include "tests/support/resp_reply.hpp"

namespace sluice::store::redis {
namespace {

using test::reply_of;

TEST(KeySlot, IsCrc16OfTheHashTagOrTheWholeKey) {
  EXPECT_EQ(key_slot("123456789"), 12739);  // the CRC16/XMODEM check value, 0x31C3
  EXPECT_EQ(key_slot("foo"), 12182);        // CLUSTER KEYSLOT foo
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("a:{user1000}:b"), key_slot("user1000"));
  EXPECT_EQ(key_slot("foo{}{bar}"), 8363);                 // an empty tag: the whole key
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));  // from the first { to the next }
  EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));
  EXPECT_EQ(key_slot(""), 0);
}

TEST(SlotMap, ReadsEachRangesMasterAndSaysWhichSlotsNoneServes) {
  const auto map = read_slot_map(
      reply_of("*2\r\n"
               "*4\r\n:0\r\n:8000\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nid\r\n"
               "*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$2\r\nid\r\n"  // a replica: not a master
               "*3\r\n:8001\r\n:16000\r\n*3\r\n$0\r\n\r\n:7002\r\n$2\r\nid\r\n"),
      "10.0.0.1");
  ASSERT_TRUE(map);
  EXPECT_EQ(map->masters, (std::vector<std::string>{"127.0.0.1:7001", "10.0.0.1:7002"}));
  EXPECT_EQ(map->owner[0], 0);
  EXPECT_EQ(map->owner[8000], 0);
  EXPECT_EQ(map->owner[8001], 1);
  EXPECT_EQ(map->owner[16000], 1);
  EXPECT_EQ(map->owner[16001], SlotMap::kNone);
  EXPECT_EQ(map->uncovered(), "16001-16383");
}

TEST(SlotMap, RefusesWhatIsNotACLusterSlotsReply) {
  EXPECT_FALSE(read_slot_map(reply_of("-ERR This instance has cluster support disabled\r\n"), ""));
  EXPECT_FALSE(read_slot_map(reply_of("*1\r\n*2\r\n:0\r\n:5\r\n"), ""));  // no master
  EXPECT_FALSE(
      read_slot_map(reply_of("*1\r\n*3\r\n:9\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n"), ""));  // 9 > 5
  EXPECT_FALSE(read_slot_map(reply_of("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n"), ""));
  const auto empty = read_slot_map(reply_of("*0\r\n"), "");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->uncovered(), "0-16383");
}

}  // namespace
}  // namespace sluice::store::redis
