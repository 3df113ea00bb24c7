#pragma once

#include <stdexcept>

namespace sluice::store {

/// A store could not be used at start (Store::open): the message says why, naming no secret.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sluice::store
