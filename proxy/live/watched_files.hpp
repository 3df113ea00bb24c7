#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/proxy_config.hpp"

namespace sluice::live {

/// The files `watch: true` follows (SPEC §10): the configuration file itself, the listeners'
/// certificates, keys and client CAs, `upstream_tls`'s files, and the JWT providers' key and
/// JWKS files; as written (relative paths are the process's, as where they are read). Empty
/// when the configuration does not ask to be watched.
std::vector<std::string> watched_files(const config::ProxyConfig& config);

/// The directories to watch for changes to `files`: each one's own directory, and the directory
/// of the file it resolves to through symbolic links. A Kubernetes ConfigMap or Secret changes
/// by renaming a `..data` link in the first, never by writing the file: watching the file alone
/// would miss it.
std::vector<std::string> watched_directories(const std::vector<std::string>& files);

/// What a file holds, to tell a change from an event that changed nothing (a touch, another
/// file in the same directory, a rewrite with the same bytes).
struct FileStamp {
  bool readable = false;
  std::uint64_t content_hash = 0;

  bool operator==(const FileStamp&) const = default;
};

/// Each file and what it held when last looked at.
using FileStamps = std::map<std::string, FileStamp>;

/// Reads `path` (through its links) and hashes what it holds.
FileStamp stamp_of(const std::string& path);

/// The files of `before` looked at again.
FileStamps restamp(const FileStamps& before);

/// The names of the files whose stamp differs between `before` and `after` (same files).
std::vector<std::string> changed_files(const FileStamps& before, const FileStamps& after);

}  // namespace sluice::live
