#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace sluice::config {

/// The accepted word closest to `typed`, if it is close enough to be a likely typo (edit
/// distance at most 2, or 1 for words of 4 letters or fewer). Case-insensitive.
std::optional<std::string_view> closest_word(std::string_view typed,
                                             std::span<const std::string_view> accepted);

/// Edit distance (insertions, deletions, substitutions, adjacent swaps), case-insensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace sluice::config
