#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

namespace sluice::auth {

/// The claim at a dotted path ("org.id": the `id` member of the `org` object), or null. A name
/// that itself holds dots ("https://example.com/plan", as identity providers namespace their own
/// claims) is found too: at each level the whole rest of the path is tried first.
const boost::json::value* find_claim(const boost::json::object& claims, std::string_view path);

/// Appends a claim's text to `out`: a string as it is, a number as JSON writes it, `true` or
/// `false`. Returns false, appending nothing, for null, a list or an object: such a claim names
/// no one.
bool append_claim_text(const boost::json::value& claim, std::string& out);

}  // namespace sluice::auth
