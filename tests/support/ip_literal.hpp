#pragma once
// An address a test writes as text, known to be valid.
#include <string_view>

#include "proxy/pipeline/ip_address.hpp"

namespace sluice::test {

inline pipeline::IpAddress ip(std::string_view text) { return *pipeline::IpAddress::parse(text); }

}  // namespace sluice::test
