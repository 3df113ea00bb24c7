#pragma once

#include <string_view>

namespace sluice::admin {

// The operators' page's files (proxy/admin/page/), compiled into the binary by CMake: the page
// loads nothing from anywhere else.

/// The page's frame: the sections' tables go where it says `<!--sluice:sections-->`.
std::string_view page_html() noexcept;
std::string_view page_css() noexcept;
std::string_view page_js() noexcept;

}  // namespace sluice::admin
