#include "proxy/live/watched_files.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string_view>

namespace sluice::live {
namespace {

void add(std::vector<std::string>& files, const std::string& path) {
  if (!path.empty() && std::find(files.begin(), files.end(), path) == files.end()) {
    files.push_back(path);
  }
}

/// FNV-1a: enough to tell one version of a small file from the next.
std::uint64_t hash_of(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char byte : bytes) {
    hash = (hash ^ static_cast<unsigned char>(byte)) * 1099511628211ULL;
  }
  return hash;
}

}  // namespace

std::vector<std::string> watched_files(const config::ProxyConfig& config) {
  std::vector<std::string> files;
  if (!config.watch) {
    return files;
  }
  add(files, config.file);
  std::vector<const config::Listener*> listeners;
  for (const config::Listener& listener : config.listeners) {
    listeners.push_back(&listener);
  }
  if (config.decide) {
    listeners.push_back(&*config.decide);
  }
  for (const config::Listener* listener : listeners) {
    if (listener->tls) {
      add(files, listener->tls->cert);
      add(files, listener->tls->key);
      add(files, listener->tls->client_ca);
      add(files, listener->tls->ocsp);
    }
  }
  for (const config::RlsDomain& domain : config.rls) {
    add(files, domain.file);  // an envoyproxy/ratelimit file
  }
  add(files, config.upstream_tls.ca);
  add(files, config.upstream_tls.cert);
  add(files, config.upstream_tls.key);
  for (const config::JwtProviderConfig& provider : config.jwt_providers) {
    add(files, provider.jwks_file);
    for (const config::JwtKeyConfig& key : provider.keys) {
      add(files, key.file);
    }
  }
  return files;
}

std::vector<std::string> watched_directories(const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  std::set<std::string> directories;
  for (const std::string& file : files) {
    std::error_code ec;
    const fs::path written = fs::absolute(file, ec);
    if (ec) {
      continue;
    }
    directories.insert(written.parent_path().string());
    // weakly_canonical: a file that is missing for now (mid-swap) still names its directory.
    const fs::path resolved = fs::weakly_canonical(written, ec);
    if (!ec) {
      directories.insert(resolved.parent_path().string());
    }
  }
  return {directories.begin(), directories.end()};
}

FileStamp stamp_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return {};
  }
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) {
    return {};
  }
  return {.readable = true, .content_hash = hash_of(bytes)};
}

FileStamps restamp(const FileStamps& before) {
  FileStamps after;
  for (const auto& [path, stamp] : before) {
    after.emplace(path, stamp_of(path));
  }
  return after;
}

std::vector<std::string> changed_files(const FileStamps& before, const FileStamps& after) {
  std::vector<std::string> changed;
  for (const auto& [path, stamp] : after) {
    const auto found = before.find(path);
    if (found == before.end() || !(found->second == stamp)) {
      changed.push_back(path);
    }
  }
  return changed;
}

}  // namespace sluice::live
