// Boost's assertions in the fuzz builds (BOOST_ENABLE_ASSERT_HANDLER): reported and fatal, as
// assert() makes them, except one that is known to be wrong.
//
// Beast before Boost 1.86 asserts `n >= 5` in basic_parser::parse_chunk_header when the last
// chunk ("0\r\n") has been read and the next put() brings fewer than two more bytes of what
// follows it (boostorg/beast#2861, which relaxed the assertion). The parser itself handles that
// case (it asks for more bytes); builds with NDEBUG never check it. A client that sends a chunked
// body in small pieces makes any Debug build of the proxy hit it, so the fuzzer would stop there.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

bool known_false_assertion(const char* expr, const char* file) {
  const char* const beast_parser = "boost/beast/http/impl/basic_parser.ipp";
  const std::size_t file_length = std::strlen(file);
  const std::size_t suffix_length = std::strlen(beast_parser);
  return std::strcmp(expr, "n >= 5") == 0 && file_length >= suffix_length &&
         std::strcmp(file + file_length - suffix_length, beast_parser) == 0;
}

}  // namespace

namespace boost {

void assertion_failed_msg(const char* expr, const char* msg, const char* function, const char* file,
                          long line) {
  if (known_false_assertion(expr, file)) {
    return;
  }
  std::fprintf(stderr, "%s:%ld: %s: Assertion `%s' failed%s%s\n", file, line, function, expr,
               msg != nullptr ? ": " : "", msg != nullptr ? msg : "");
  std::abort();
}

void assertion_failed(const char* expr, const char* function, const char* file, long line) {
  assertion_failed_msg(expr, nullptr, function, file, line);
}

}  // namespace boost
