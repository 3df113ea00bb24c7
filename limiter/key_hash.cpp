#include "limiter/key_hash.hpp"

#include <cstring>
#include <random>

namespace sluice::limiter {
namespace {

__extension__ using Uint128 = unsigned __int128;

// Multiply to 128 bits and fold: the mixing step of the wyhash family of hashes.
std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) noexcept {
  const Uint128 product = static_cast<Uint128>(a) * b;
  return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
}

std::uint64_t load64(const char* p) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint64_t load_tail(const char* p, std::size_t n) noexcept {  // 1 <= n < 8
  std::uint64_t v = 0;
  std::memcpy(&v, p, n);
  return v;
}

constexpr std::uint64_t kMix0 = 0xa0761d6478bd642fULL;
constexpr std::uint64_t kMix1 = 0xe7037ed1a0b428dbULL;
constexpr std::uint64_t kMix2 = 0x8ebc6af09c88c6e3ULL;

std::uint64_t process_seed() noexcept {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

KeyHash hash_key(std::string_view key, std::uint64_t seed) noexcept {
  const char* p = key.data();
  std::size_t n = key.size();
  std::uint64_t h = seed ^ fold_multiply(seed ^ kMix0, n ^ kMix1);
  while (n >= 16) {
    h = fold_multiply(load64(p) ^ kMix1 ^ h, load64(p + 8) ^ kMix2);
    p += 16;
    n -= 16;
  }
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  if (n >= 8) {
    a = load64(p);
    b = n > 8 ? load_tail(p + 8, n - 8) : 0;
  } else if (n > 0) {
    a = load_tail(p, n);
  }
  h = fold_multiply(a ^ kMix1 ^ h, b ^ kMix2 ^ key.size());
  h = fold_multiply(h ^ kMix0, h ^ kMix2);
  return h == 0 ? 1 : h;
}

KeyHash hash_key(std::string_view key) noexcept {
  static const std::uint64_t seed = process_seed();
  return hash_key(key, seed);
}

}  // namespace sluice::limiter
