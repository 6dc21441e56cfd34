#include "vectorscan_form.h"

#include <cctype>
#include <optional>

namespace attribution::detail {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view p) : p_(p) {}

  // The end of the escape at `i` (p_[i] == '\\'), or nullopt when it cannot be read.
  std::optional<size_t> escape_end(size_t i) const {
    if (i + 1 >= p_.size()) return std::nullopt;
    char c = p_[i + 1];
    if (c == 'Q' || c == 'E') return std::nullopt;
    if ((c == 'x' || c == 'p' || c == 'P') && i + 2 < p_.size() && p_[i + 2] == '{') {
      size_t close = p_.find('}', i + 3);
      if (close == std::string_view::npos) return std::nullopt;
      return close + 1;
    }
    if (c == 'x') {
      size_t j = i + 2;
      while (j < p_.size() && j < i + 4 && std::isxdigit(static_cast<unsigned char>(p_[j]))) ++j;
      return j;
    }
    if ((c == 'p' || c == 'P') && i + 2 < p_.size()) return i + 3;
    return i + 2;
  }

  // The end of the class starting at `i` (p_[i] == '['), or nullopt.
  std::optional<size_t> class_end(size_t i) const {
    size_t j = i + 1;
    if (j < p_.size() && p_[j] == '^') ++j;
    if (j < p_.size() && p_[j] == ']') ++j;  // a literal ']' first
    while (j < p_.size()) {
      char c = p_[j];
      if (c == '\\') {
        auto e = escape_end(j);
        if (!e) return std::nullopt;
        j = *e;
      } else if (c == '[' && j + 1 < p_.size() && p_[j + 1] == ':') {
        size_t close = p_.find(":]", j + 2);
        if (close == std::string_view::npos) return std::nullopt;
        j = close + 2;
      } else if (c == ']') {
        return j + 1;
      } else {
        ++j;
      }
    }
    return std::nullopt;
  }

 private:
  std::string_view p_;
};

}  // namespace

std::string exclude_newline_from_negated_classes(std::string_view pattern) {
  Reader r(pattern);
  std::string out;
  out.reserve(pattern.size() + 8);
  size_t i = 0;
  while (i < pattern.size()) {
    char c = pattern[i];
    if (c == '\\') {
      auto e = r.escape_end(i);
      if (!e) return std::string(pattern);
      out.append(pattern.substr(i, *e - i));
      i = *e;
      continue;
    }
    if (c == '[') {
      auto e = r.class_end(i);
      if (!e) return std::string(pattern);
      std::string_view cls = pattern.substr(i, *e - i);
      out.append(cls.substr(0, cls.size() - 1));
      if (cls.size() > 2 && cls[1] == '^' && cls.find("\\n") == std::string_view::npos) out += "\\n";
      out += ']';
      i = *e;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

}  // namespace attribution::detail
