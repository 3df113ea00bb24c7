#include "proxy/http/jwks_client.hpp"

#include <boost/asio/co_spawn.hpp>

#include "proxy/http/fetch_client.hpp"

namespace sluice::http {

io::Awaitable<JwksFetched> fetch_jwks(std::string url, tls::Context* context,
                                      const config::UpstreamTls& tls, io::Duration timeout) {
  // Named, not a temporary in the co_await: GCC 12 destroys such temporaries twice.
  FetchRequest request{.url = std::move(url),
                       .accept = "application/jwk-set+json, application/json",
                       .body_limit = auth::kMaxJwksBytes,
                       .too_large = "the key set is larger than 1 MiB"};
  Fetched fetched = co_await fetch(std::move(request), context, tls, timeout);
  JwksFetched keys;
  keys.error = std::move(fetched.error);
  if (keys.error.empty()) {
    keys.keys = auth::read_jwks(fetched.body, keys.error);
  }
  co_return keys;
}

JwksFetched fetch_jwks_now(const std::string& url, tls::Context* context,
                           const config::UpstreamTls& tls, io::Duration timeout) {
  net::io_context io;
  JwksFetched fetched;
  net::co_spawn(io.get_executor(), fetch_jwks(url, context, tls, timeout),
                [&fetched](std::exception_ptr failure, JwksFetched result) {
                  if (failure) {
                    fetched.error = "the fetch failed";
                  } else {
                    fetched = std::move(result);
                  }
                });
  io.run();
  return fetched;
}

live::KeySetFetch blocking_jwks_fetch() {
  return [](const std::string& url, const tls::Contexts& contexts,
            const config::ProxyConfig& config, std::string& error) {
    JwksFetched fetched =
        fetch_jwks_now(url, contexts.upstream.get(), config.upstream_tls, kJwksFetchTimeout);
    error = std::move(fetched.error);
    return std::move(fetched.keys);
  };
}

}  // namespace sluice::http
