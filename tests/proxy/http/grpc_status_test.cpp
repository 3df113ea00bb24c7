#include "proxy/http/grpc_status.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::http {
namespace {

TEST(GrpcStatus, IsSentAsItsCodeInDecimal) {
  // gRPC's status codes (its statuscodes.md): the number each name stands for.
  for (const GrpcStatus status :
       {GrpcStatus::invalid_argument, GrpcStatus::deadline_exceeded, GrpcStatus::permission_denied,
        GrpcStatus::resource_exhausted, GrpcStatus::unimplemented, GrpcStatus::internal,
        GrpcStatus::unavailable, GrpcStatus::unauthenticated}) {
    EXPECT_EQ(grpc_status_text(status), std::to_string(static_cast<unsigned>(status)));
  }
  EXPECT_EQ(grpc_status_text(GrpcStatus::resource_exhausted), "8");
  EXPECT_EQ(grpc_status_text(GrpcStatus::permission_denied), "7");
  EXPECT_EQ(grpc_status_text(GrpcStatus::unauthenticated), "16");
  EXPECT_EQ(grpc_status_text(GrpcStatus::invalid_argument), "3");
}

}  // namespace
}  // namespace sluice::http
