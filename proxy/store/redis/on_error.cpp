#include "proxy/store/redis/on_error.hpp"

namespace sluice::store::redis {

pipeline::ChargeResult fall_back(config::OnStoreError on_error, const pipeline::Charges& charges,
                                 limiter::TimePoint now) {
  switch (on_error) {
    case config::OnStoreError::local:
      return pipeline::Pipeline::charge_locally(charges, now);
    case config::OnStoreError::allow: {
      pipeline::ChargeResult result;
      result.counted = pipeline::Counted::let_pass;
      return result;
    }
    case config::OnStoreError::deny:
      break;
  }
  pipeline::ChargeResult result;
  result.counted = pipeline::Counted::refuse;
  return result;
}

}  // namespace sluice::store::redis
