#include "proxy/tls/ticket_keys.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "tests/support/manual_clock.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/support/tls_handshake.hpp"

namespace sluice::tls {
namespace {

using namespace std::chrono_literals;

/// A server context with the test certificate, issuing tickets with `keys`.
SSL_CTX* server_with(TicketKeys& keys, const test::TestCertificates& files) {
  SSL_CTX* context = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate_chain_file(context, files.server_cert().c_str());
  SSL_CTX_use_PrivateKey_file(context, files.server_key().c_str(), SSL_FILETYPE_PEM);
  SSL_CTX_set_session_cache_mode(context, SSL_SESS_CACHE_OFF);
  keys.install(context);
  return context;
}

class TicketKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = SSL_CTX_new(TLS_client_method());
    server_ = server_with(keys_, files_);
  }
  void TearDown() override {
    SSL_CTX_free(client_);
    SSL_CTX_free(server_);
  }

  /// A handshake on `server` offering `session` (null: none); whether it resumed it, and the
  /// client's session after it in `next`.
  bool resumes(SSL_CTX* server, SSL_SESSION* session, SSL_SESSION** next = nullptr) {
    test::TlsHandshake handshake(client_, server);
    if (session != nullptr) {
      SSL_set_session(handshake.client(), session);
    }
    EXPECT_TRUE(handshake.run());
    if (next != nullptr) {
      *next = handshake.session();
    }
    return SSL_session_reused(handshake.client()) == 1;
  }

  test::TestCertificates files_;
  test::ManualClock clock_;
  TicketKeys keys_{clock_, 1h};
  SSL_CTX* client_ = nullptr;
  SSL_CTX* server_ = nullptr;
};

TEST_F(TicketKeysTest, ATicketResumesItsSession) {
  SSL_SESSION* session = nullptr;
  EXPECT_FALSE(resumes(server_, nullptr, &session));
  EXPECT_TRUE(resumes(server_, session));
  SSL_SESSION_free(session);
}

/// Tickets the client received (its new-session callback), across the test.
int g_tickets_received = 0;

TEST_F(TicketKeysTest, ATls13ResumptionIssuesAFreshTicket) {
  // A TLS 1.3 client uses a ticket once (RFC 8446 §C.4): without a new ticket on each
  // resumption, every other connection of a client that reconnects (wrk, for one) is a full
  // handshake.
  SSL_CTX_set_session_cache_mode(client_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
  SSL_CTX_sess_set_new_cb(client_, [](SSL*, SSL_SESSION*) {
    ++g_tickets_received;
    return 0;  // not kept: the test takes sessions from the connections
  });
  g_tickets_received = 0;
  SSL_SESSION* first = nullptr;
  EXPECT_FALSE(resumes(server_, nullptr, &first));
  EXPECT_EQ(SSL_SESSION_get_protocol_version(first), TLS1_3_VERSION);
  EXPECT_EQ(g_tickets_received, 2) << "OpenSSL's two after a full handshake";
  EXPECT_TRUE(resumes(server_, first));
  EXPECT_EQ(g_tickets_received, 3) << "one more after the resumption";
  SSL_SESSION_free(first);
}

TEST_F(TicketKeysTest, AfterOneRotationItStillResumesAndIsRenewedWithTheNewKey) {
  SSL_SESSION* first = nullptr;
  resumes(server_, nullptr, &first);
  clock_.advance(61min);
  SSL_SESSION* renewed = nullptr;
  EXPECT_TRUE(resumes(server_, first, &renewed)) << "the previous key still opens it";
  clock_.advance(61min);
  EXPECT_FALSE(resumes(server_, first)) << "two rotations old: forgotten";
  EXPECT_TRUE(resumes(server_, renewed)) << "the renewed ticket has the current key's name";
  SSL_SESSION_free(first);
  SSL_SESSION_free(renewed);
}

TEST_F(TicketKeysTest, ContextsSharingTheKeysResumeEachOthersSessionsOthersDoNot) {
  SSL_SESSION* session = nullptr;
  resumes(server_, nullptr, &session);
  SSL_CTX* reloaded = server_with(keys_, files_);  // a reload builds a new context
  EXPECT_TRUE(resumes(reloaded, session));
  test::ManualClock other_clock;
  TicketKeys other_keys(other_clock, 1h);
  SSL_CTX* stranger = server_with(other_keys, files_);
  EXPECT_FALSE(resumes(stranger, session)) << "a ticket sealed with other keys";
  SSL_CTX_free(reloaded);
  SSL_CTX_free(stranger);
  SSL_SESSION_free(session);
}

}  // namespace
}  // namespace sluice::tls
