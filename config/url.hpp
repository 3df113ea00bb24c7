#pragma once

#include <string>
#include <string_view>

namespace sluice::config {

/// A URL as it may be shown (logs, errors, /config, `sluice check`): its password replaced.
/// `redis://user:secret@host:6379/0` → `redis://user:***@host:6379/0`.
std::string redact_url(std::string_view url);

}  // namespace sluice::config
