#include "proxy/http/client_connection.hpp"

#include <algorithm>

namespace sluice::http {
namespace {

pipeline::IpAddress address_of(const tcp::endpoint& endpoint) {
  pipeline::IpAddress address;
  const net::ip::address ip = endpoint.address();
  if (ip.is_v4()) {
    const auto bytes = ip.to_v4().to_bytes();
    std::copy(bytes.begin(), bytes.end(), address.bytes.begin());
    address.ipv4 = true;
  } else if (ip.to_v6().is_v4_mapped()) {
    const auto bytes = net::ip::make_address_v4(net::ip::v4_mapped, ip.to_v6()).to_bytes();
    std::copy(bytes.begin(), bytes.end(), address.bytes.begin());
    address.ipv4 = true;
  } else {
    const auto bytes = ip.to_v6().to_bytes();
    std::copy(bytes.begin(), bytes.end(), address.bytes.begin());
    address.ipv4 = false;
  }
  return address;
}
}  // namespace

ClientConnection::ClientConnection(io::Socket socket) : stream(std::move(socket)) {
  beast::error_code ec;
  const tcp::endpoint endpoint = stream.socket().remote_endpoint(ec);
  peer = address_of(endpoint);
  peer_address_text = endpoint.address().to_string();
}

}  // namespace sluice::http
