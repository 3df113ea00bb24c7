#include "proxy/store/redis/resp.hpp"

#include <hiredis/hiredis.h>

#include <array>
#include <charconv>
#include <new>
#include <stdexcept>
#include <string>

namespace sluice::store::redis {
namespace {

/// hiredis would allocate an array's element table as soon as it reads the length, before any
/// element arrives ("*500000000" would take 4 GB); the builders below would resize a vector to
/// it. Longer arrays are refused: the store's longest reply is a batch's decisions.
constexpr int kMaxArrayElements = 1 << 16;

}  // namespace

/// hiredis's reader with builders that write each reply into `reply`, which keeps its capacity
/// from reply to reply: an element's place is its parent's element at the task's index.
struct RespReader::State {
  redisReader* reader = nullptr;
  RespValue reply;
  long long refused_array = -1;  ///< The length of the array refused by the last parse, or -1.

  static State& of(const redisReadTask* task) {
    // The reader's privdata, which hiredis copies into every task.
    return *static_cast<State*>(task->privdata);
  }

  /// The value a task builds: the reply itself, or its parent's element.
  static RespValue* place(const redisReadTask* task, RespValue::Kind kind) {
    RespValue* value = task->parent == nullptr
                           ? &of(task).reply
                           : &static_cast<RespValue*>(task->parent->obj)
                                  ->elements[static_cast<std::size_t>(task->idx)];
    value->kind = kind;
    value->text.clear();
    value->integer = 0;
    return value;
  }

  static void* create_string(const redisReadTask* task, char* text, size_t length) {
    const RespValue::Kind kind = task->type == REDIS_REPLY_STATUS  ? RespValue::Kind::status
                                 : task->type == REDIS_REPLY_ERROR ? RespValue::Kind::error
                                                                   : RespValue::Kind::bulk;
    RespValue* value = place(task, kind);
    value->text.assign(text, length);
    value->elements.clear();
    return value;
  }
  static void* create_array(const redisReadTask* task, int elements) {
    if (elements > kMaxArrayElements) {
      of(task).refused_array = elements;
      return nullptr;  // hiredis reports it as running out of memory
    }
    RespValue* value = place(task, RespValue::Kind::array);
    value->elements.resize(static_cast<std::size_t>(elements));
    return value;
  }
  static void* create_integer(const redisReadTask* task, long long integer) {
    RespValue* value = place(task, RespValue::Kind::integer);
    value->integer = integer;
    value->elements.clear();
    return value;
  }
  static void* create_nil(const redisReadTask* task) {
    RespValue* value = place(task, RespValue::Kind::nil);
    value->elements.clear();
    return value;
  }
  static void free_object(void* /*reply*/) {}  // the reply is the State's own

  State() {
    static redisReplyObjectFunctions functions{
        .createString = create_string,
        .createArray = create_array,
        .createInteger = create_integer,
        .createNil = create_nil,
        .freeObject = free_object,
    };
    reader = redisReaderCreateWithFunctions(&functions);
    if (reader == nullptr) {
      throw std::bad_alloc();
    }
    reader->privdata = this;
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() { redisReaderFree(reader); }
};

void append_command(std::string& out, std::span<const std::string_view> arguments) {
  // A batch's command has many short arguments: lengths go through to_chars into the text,
  // with no temporary string and no strlen per piece.
  const auto append_length = [&out](char mark, std::size_t length) {
    std::array<char, 24> text;
    text[0] = mark;
    char* end = std::to_chars(text.data() + 1, text.data() + text.size() - 2, length).ptr;
    *end++ = '\r';
    *end++ = '\n';
    out.append(text.data(), end);
  };
  append_length('*', arguments.size());
  for (const std::string_view argument : arguments) {
    append_length('$', argument.size());
    out.append(argument);
    out.append(std::string_view("\r\n"));
  }
}

RespReader::RespReader() : state_(std::make_unique<State>()) {}

RespReader::RespReader(RespReader&&) noexcept = default;
RespReader& RespReader::operator=(RespReader&&) noexcept = default;
RespReader::~RespReader() = default;

void RespReader::feed(std::string_view bytes) {
  if (redisReaderFeed(state_->reader, bytes.data(), bytes.size()) != REDIS_OK) {
    throw std::runtime_error("the Redis reply reader ran out of memory");
  }
}

const RespValue* RespReader::next() {
  void* reply = nullptr;
  state_->refused_array = -1;
  if (redisReaderGetReply(state_->reader, &reply) != REDIS_OK) {
    if (state_->refused_array >= 0) {
      throw std::runtime_error("not a Redis reply: an array of " +
                               std::to_string(state_->refused_array) + " elements (at most " +
                               std::to_string(kMaxArrayElements) + ")");
    }
    throw std::runtime_error(std::string("not a Redis reply: ") + state_->reader->errstr);
  }
  return static_cast<const RespValue*>(reply);
}

}  // namespace sluice::store::redis
