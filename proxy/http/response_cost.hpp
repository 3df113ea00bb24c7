#pragma once

#include <optional>
#include <string_view>

#include "limiter/verdict.hpp"
#include "proxy/cost/response_meter.hpp"
#include "proxy/http/body.hpp"

namespace sluice::http {

/// Reads what a response cost while it is relayed (the route's `cost_from`, SPEC §9), for the
/// charges that wait for it: the relay begins it with the response's head, and the body carry
/// shows it each piece on its way to the client. Kept with a request state and reused, so a
/// warm one does not allocate.
class ResponseCost final : public BodyObserver {
 public:
  /// A new response, read as `spec` says (the route's, which outlives the request), whose head
  /// is `head`: anything with value_of(name) (HeadFields, an HTTP/2 call's FieldList).
  template <class Head>
  void begin(const cost::MeterSpec& spec, const Head& head) {
    meter_.start(spec, head.value_of("content-type"));
    if (spec.kind == cost::MeterSpec::Kind::header) {
      const std::string_view value = head.value_of(spec.header);
      if (!value.empty()) {
        meter_.field(spec.header, value);
      }
    }
    begun_ = true;
  }
  /// The cost the response's head said (a `header` meter's), known before its body.
  std::optional<limiter::Permits> cost_in_head() const noexcept {
    const std::optional<std::uint64_t> cost = begun_ ? meter_.cost_in_head() : std::nullopt;
    return cost ? std::optional(static_cast<limiter::Permits>(*cost)) : std::nullopt;
  }
  void seen(const BodyPiece& piece) override;
  /// Ends the response (whole or cut short): what it said. Without begin() (no response came),
  /// nothing.
  cost::Reading end();

 private:
  cost::ResponseMeter meter_;
  bool begun_ = false;
};

}  // namespace sluice::http
