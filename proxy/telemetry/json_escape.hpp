#pragma once

#include <fmt/format.h>

#include <string_view>

namespace sluice::telemetry {

/// Appends `text` as the inside of a JSON string, quotes left to the caller: the one escape rule
/// of the fast writers (the access log, the proxy's own problem+json bodies). Any bytes give valid
/// JSON on one line: `"` and `\` are escaped; control characters and DEL become \u00XX; U+2028
/// and U+2029 become \u2028 and \u2029 (line breaks to some viewers); a byte that starts no
/// well-formed UTF-8 sequence becomes \ufffd. All other text is copied as it is.
void append_json_escaped(fmt::memory_buffer& out, std::string_view text);

}  // namespace sluice::telemetry
