#pragma once

#include <string_view>

namespace sluice::http {

/// The gRPC status codes the proxy answers with itself (gRPC's status codes, as sent in
/// `grpc-status`): what a refused or failed call learns.
enum class GrpcStatus : unsigned char {
  invalid_argument = 3,    ///< A malformed message (the decision service's calls).
  deadline_exceeded = 4,   ///< The call's grpc-timeout ran out waiting for the upstream.
  permission_denied = 7,   ///< Denied or banned (SPEC §7).
  resource_exhausted = 8,  ///< Limited (SPEC §7).
  unimplemented = 12,      ///< No route.
  internal = 13,           ///< A malformed request.
  unavailable = 14,        ///< The upstream failed, or the store failed closed.
  unauthenticated = 16,    ///< A missing or invalid credential.
};

/// The `grpc-status` field's value.
constexpr std::string_view grpc_status_text(GrpcStatus status) noexcept {
  switch (status) {
    case GrpcStatus::invalid_argument:
      return "3";
    case GrpcStatus::deadline_exceeded:
      return "4";
    case GrpcStatus::permission_denied:
      return "7";
    case GrpcStatus::resource_exhausted:
      return "8";
    case GrpcStatus::unimplemented:
      return "12";
    case GrpcStatus::internal:
      return "13";
    case GrpcStatus::unavailable:
      return "14";
    case GrpcStatus::unauthenticated:
      return "16";
  }
  return "2";  // UNKNOWN
}

}  // namespace sluice::http
