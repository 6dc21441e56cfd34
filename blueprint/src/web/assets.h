// The front end compiled into the binary (generated from dashboard/src by dashboard/embed.cmake).
#pragma once

#include <cstddef>
#include <string_view>

namespace attribution::blueprint::web {

struct EmbeddedAsset {
  std::string_view path;  // URL path: "/" for index.html, "/assets/<file>" for the rest
  std::string_view content_type;
  std::string_view body;
};

// nullptr-terminated by size: returns the table and its length.
const EmbeddedAsset* embedded_assets(size_t& count);

}  // namespace attribution::blueprint::web
