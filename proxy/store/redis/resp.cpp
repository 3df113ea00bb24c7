#include "proxy/store/redis/resp.hpp"

#include <hiredis/hiredis.h>

#include <new>
#include <stdexcept>
#include <string>

namespace sluice::store::redis {
namespace {

redisReader* as_reader(void* reader) noexcept { return static_cast<redisReader*>(reader); }

/// hiredis allocates an array's element table as soon as it reads the length, before any element
/// arrives: "*500000000" would take 4 GB. Longer arrays are refused; the store's longest reply,
/// a decision for 16 charges, has 81 elements.
constexpr int kMaxArrayElements = 1 << 16;

/// The length of the array refused by the last redisReaderGetReply on this thread, or -1.
thread_local long long refused_array = -1;

/// hiredis's own reply builders, but for arrays longer than kMaxArrayElements (a null object,
/// which hiredis reports as running out of memory).
redisReplyObjectFunctions* reply_functions() {
  static void* (*create_array)(const redisReadTask*, int) = nullptr;
  static redisReplyObjectFunctions functions = [] {
    redisReader* reader = redisReaderCreate();
    if (reader == nullptr) {
      throw std::bad_alloc();
    }
    redisReplyObjectFunctions own = *reader->fn;
    redisReaderFree(reader);
    create_array = own.createArray;
    own.createArray = [](const redisReadTask* task, int elements) -> void* {
      if (elements > kMaxArrayElements) {
        refused_array = elements;
        return nullptr;
      }
      return create_array(task, elements);
    };
    return own;
  }();
  return &functions;
}

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

RespReader::RespReader() : reader_(redisReaderCreateWithFunctions(reply_functions())) {
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
  refused_array = -1;
  if (redisReaderGetReply(as_reader(reader_.get()), &raw) != REDIS_OK) {
    if (refused_array >= 0) {
      throw std::runtime_error("not a Redis reply: an array of " + std::to_string(refused_array) +
                               " elements (at most " + std::to_string(kMaxArrayElements) + ")");
    }
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
