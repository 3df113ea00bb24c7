#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::config {

/// Looks a variable up; nullopt when it is not set.
using Environment = std::function<std::optional<std::string>(std::string_view name)>;

/// The process environment.
std::optional<std::string> process_environment(std::string_view name);

/// Expands `${NAME}` and `${NAME:-default}` in `text` (SPEC §1). `$$` stands for a literal `$`.
/// Returns the expanded text, or sets `error` (and returns nullopt) for an unset variable
/// without a default or an unterminated `${`.
std::optional<std::string> expand_environment(std::string_view text, const Environment& environment,
                                              std::string& error);

}  // namespace sluice::config
