#pragma once

#include <string>
#include <string_view>

namespace sluice::admin {

/// `text` safe as HTML text or a quoted attribute's value: `&`, `<`, `>`, `"` and `'` become
/// entities, so that a key, a path or a header a client chose is shown, never run.
std::string html_escaped(std::string_view text);

}  // namespace sluice::admin
