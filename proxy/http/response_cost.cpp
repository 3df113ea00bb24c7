#include "proxy/http/response_cost.hpp"

#include "proxy/http/relay_heads.hpp"

namespace sluice::http {
namespace {

/// Hands a message's trailer fields (HTTP/2's, gRPC's) to the meter.
class TrailersToMeter final : public HeadOut {
 public:
  explicit TrailersToMeter(cost::ResponseMeter& meter) noexcept : meter_(meter) {}
  void request(std::string_view, std::string_view, std::string_view) override {}
  void response(unsigned, unsigned, std::string_view) override {}
  void field(std::string_view name, std::string_view value) override {
    meter_.trailer(name, value);
  }
  void lines(std::string_view) override {}
  void end() override {}

 private:
  cost::ResponseMeter& meter_;
};

}  // namespace

void ResponseCost::seen(const BodyPiece& piece) {
  if (!begun_) {
    return;
  }
  meter_.body(piece.bytes);
  if (piece.trailers != nullptr) {
    TrailersToMeter to_meter(meter_);
    piece.trailers->write(to_meter);
  }
}

cost::Reading ResponseCost::end() {
  if (!begun_) {
    return {};
  }
  begun_ = false;
  return meter_.finish();
}

}  // namespace sluice::http
