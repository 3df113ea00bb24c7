#pragma once

#include <ostream>

namespace sluice::proxy {

/// Prints how each limiter algorithm decides a burst of requests from one client, on a simulated
/// clock. Stands in for `sluice run` until the proxy exists.
void print_engine_demo(std::ostream& out);

}  // namespace sluice::proxy
