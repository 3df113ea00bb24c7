#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/load_config.hpp"
#include "proxy/pipeline/pipeline.hpp"

namespace sluice::test {

/// A pipeline built from config text, and requests to send through it.
class PipelineFixture {
 public:
  explicit PipelineFixture(const std::string& yaml)
      : config_(std::make_unique<config::ProxyConfig>(config::parse_config(
            yaml, "proxy.yaml", [](std::string_view) { return std::nullopt; }))),
        pipeline_(std::make_unique<pipeline::Pipeline>(*config_)) {}

  struct Request {
    std::string method = "GET";
    std::string target = "/";
    std::string host = "api.example.com";
    std::vector<pipeline::Header> headers = {};
    std::string peer = "198.51.100.7";
  };

  /// The request as the pipeline sees it; refers to `request`.
  static pipeline::RequestView view_of(const Request& request) {
    return {.method = request.method,
            .target = request.target,
            .host = request.host,
            .headers = request.headers,
            .peer = *pipeline::IpAddress::parse(request.peer)};
  }

  pipeline::Decision send(const Request& request, limiter::TimePoint now,
                          std::optional<limiter::Permits> cost = std::nullopt) {
    return pipeline_->decide(view_of(request), now, cost);
  }

  pipeline::Pipeline& pipeline() { return *pipeline_; }
  const config::ProxyConfig& config() const { return *config_; }

 private:
  std::unique_ptr<config::ProxyConfig> config_;
  std::unique_ptr<pipeline::Pipeline> pipeline_;
};

}  // namespace sluice::test
