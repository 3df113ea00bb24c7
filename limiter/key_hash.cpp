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

std::uint64_t load32(const char* p) noexcept {
  std::uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint64_t byte(const char* p) noexcept { return static_cast<unsigned char>(*p); }

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
  const std::size_t n = key.size();
  std::uint64_t h = seed ^ fold_multiply(seed ^ kMix0, n ^ kMix1);
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  // Short keys (IP addresses, tokens) are read with a few fixed-size loads that may overlap,
  // never byte by byte and never through a variable-length copy.
  if (n <= 16) {
    if (n >= 4) {
      const std::size_t middle = (n >> 3) << 2;  // 0 for 4..7 bytes, 4 for 8..16
      a = (load32(p) << 32) | load32(p + middle);
      b = (load32(p + n - 4) << 32) | load32(p + n - 4 - middle);
    } else if (n > 0) {
      a = (byte(p) << 16) | (byte(p + n / 2) << 8) | byte(p + n - 1);
    }
  } else {
    std::size_t left = n;
    while (left > 16) {
      h = fold_multiply(load64(p) ^ kMix1 ^ h, load64(p + 8) ^ kMix2);
      p += 16;
      left -= 16;
    }
    a = load64(p + left - 16);
    b = load64(p + left - 8);
  }
  h = fold_multiply(a ^ kMix1 ^ h, b ^ kMix2 ^ n);
  h = fold_multiply(h ^ kMix0, h ^ kMix2);
  return h == 0 ? 1 : h;
}

KeyHash hash_key(std::string_view key) noexcept {
  static const std::uint64_t seed = process_seed();
  return hash_key(key, seed);
}

}  // namespace sluice::limiter
