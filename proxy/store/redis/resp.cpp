#include "proxy/store/redis/resp.hpp"

#include <hiredis/hiredis.h>

#include <stdexcept>

namespace sluice::store::redis {
namespace {

redisReader* as_reader(void* reader) noexcept { return static_cast<redisReader*>(reader); }

RespValue convert(const redisReply& reply) {
  RespValue value;
  switch (reply.type) {
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
    case REDIS_REPLY_STRING:
      value.kind = reply.type == REDIS_REPLY_STATUS  ? RespValue::Kind::status
                   : reply.type == REDIS_REPLY_ERROR ? RespValue::Kind::error
                                                     : RespValue::Kind::bulk;
      value.text.assign(reply.str, reply.len);
      break;
    case REDIS_REPLY_INTEGER:
      value.kind = RespValue::Kind::integer;
      value.integer = reply.integer;
      break;
    case REDIS_REPLY_ARRAY:
      value.kind = RespValue::Kind::array;
      value.elements.reserve(reply.elements);
      for (std::size_t i = 0; i < reply.elements; ++i) {
        value.elements.push_back(convert(*reply.element[i]));
      }
      break;
    default:  // REDIS_REPLY_NIL
      value.kind = RespValue::Kind::nil;
      break;
  }
  return value;
}

}  // namespace

void append_command(std::string& out, std::span<const std::string_view> arguments) {
  out += '*';
  out += std::to_string(arguments.size());
  out += "\r\n";
  for (const std::string_view argument : arguments) {
    out += '$';
    out += std::to_string(argument.size());
    out += "\r\n";
    out += argument;
    out += "\r\n";
  }
}

void RespReader::Deleter::operator()(void* reader) const noexcept {
  redisReaderFree(as_reader(reader));
}

RespReader::RespReader() : reader_(redisReaderCreate()) {
  if (!reader_) {
    throw std::bad_alloc();
  }
}

RespReader::RespReader(RespReader&&) noexcept = default;
RespReader& RespReader::operator=(RespReader&&) noexcept = default;
RespReader::~RespReader() = default;

void RespReader::feed(std::string_view bytes) {
  if (redisReaderFeed(as_reader(reader_.get()), bytes.data(), bytes.size()) != REDIS_OK) {
    throw std::runtime_error("the Redis reply reader ran out of memory");
  }
}

std::optional<RespValue> RespReader::next() {
  void* raw = nullptr;
  if (redisReaderGetReply(as_reader(reader_.get()), &raw) != REDIS_OK) {
    throw std::runtime_error(std::string("not a Redis reply: ") + as_reader(reader_.get())->errstr);
  }
  if (raw == nullptr) {
    return std::nullopt;
  }
  const std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(raw),
                                                           freeReplyObject);
  return convert(*reply);
}

}  // namespace sluice::store::redis
