#pragma once

#include <string>
#include <string_view>

namespace sluice::auth {

/// Decodes base64url without padding (RFC 7515 §2, RFC 4648 §5), strictly: any byte outside the
/// alphabet, `=`, a length that no encoding has (1 mod 4), or bits left over in the last
/// character that an encoder would have written as zero make it false. One token, one reading:
/// a lenient decoder lets the same signature be sent in several spellings.
bool decode_base64url(std::string_view text, std::string& bytes);

/// Encodes bytes as base64url without padding.
std::string encode_base64url(std::string_view bytes);

}  // namespace sluice::auth
