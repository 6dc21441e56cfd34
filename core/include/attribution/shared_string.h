// SharedString: an immutable string shared by reference, for the names a large job repeats on every
// record (a rule's id, a node, a source, a field's name).
//
// Contract: reads as a `const std::string&` (conversion, str(), view() and std::string's common
// reads); compares and orders by content, so swapping it for std::string changes no order and
// no output. Copies share one allocation; the empty string holds none.
// Thread-safety: the count is atomic, so copies of one string may live on several threads; a single
// SharedString object is not to be assigned from two threads at once.
#pragma once

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace attribution {

// Every evidence line of one source holds the same copy of its name, rule id and node, and every
// record of one rule the same copies of its field names, instead of one allocation each (a 16,384-rank
// job keeps 150k evidence lines and 110k records).
class SharedString {
 public:
  SharedString() = default;
  SharedString(std::string s) { assign(std::move(s)); }  // NOLINT: implicit, like std::string
  SharedString(std::string_view s) { assign(std::string(s)); }  // NOLINT
  SharedString(const char* s) { assign(std::string(s)); }  // NOLINT
  SharedString(const SharedString& o) noexcept : rep_(o.rep_) {
    if (rep_ != nullptr) rep_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedString(SharedString&& o) noexcept : rep_(o.rep_) { o.rep_ = nullptr; }
  SharedString& operator=(const SharedString& o) noexcept {
    SharedString(o).swap(*this);
    return *this;
  }
  SharedString& operator=(SharedString&& o) noexcept {
    SharedString(std::move(o)).swap(*this);
    return *this;
  }
  ~SharedString() { release(); }

  const std::string& str() const { return rep_ != nullptr ? rep_->s : empty_string(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads as a std::string
  std::string_view view() const { return str(); }
  const char* c_str() const { return str().c_str(); }
  const char* data() const { return str().data(); }
  size_t size() const { return rep_ != nullptr ? rep_->s.size() : 0; }
  bool empty() const { return rep_ == nullptr; }
  void swap(SharedString& o) noexcept { std::swap(rep_, o.rep_); }
  // std::string's reads, for code that treats the value as one.
  char operator[](size_t i) const { return str()[i]; }
  bool starts_with(std::string_view p) const { return view().starts_with(p); }
  size_t find(std::string_view p, size_t pos = 0) const { return view().find(p, pos); }
  size_t find(char c, size_t pos = 0) const { return view().find(c, pos); }
  size_t rfind(std::string_view p, size_t pos = std::string::npos) const { return view().rfind(p, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const { return view().rfind(c, pos); }
  int compare(size_t pos, size_t n, std::string_view p) const { return view().substr(pos, n).compare(p); }
  std::string substr(size_t pos = 0, size_t n = std::string::npos) const { return str().substr(pos, n); }
  friend std::ostream& operator<<(std::ostream& os, const SharedString& s) { return os << s.str(); }
  friend std::string operator+(const SharedString& a, std::string_view b) { return a.str() + std::string(b); }
  friend std::string operator+(std::string_view a, const SharedString& b) { return std::string(a) + b.str(); }

  friend bool operator==(const SharedString& a, const SharedString& b) {
    return a.rep_ == b.rep_ || a.str() == b.str();
  }
  friend std::strong_ordering operator<=>(const SharedString& a, const SharedString& b) {
    if (a.rep_ == b.rep_) return std::strong_ordering::equal;
    return a.view().compare(b.view()) <=> 0;
  }
  // Against std::string, std::string_view and string literals.
  template <class T>
    requires(std::is_convertible_v<const T&, std::string_view> && !std::is_same_v<T, SharedString>)
  friend bool operator==(const SharedString& a, const T& b) {
    return a.view() == std::string_view(b);
  }
  template <class T>
    requires(std::is_convertible_v<const T&, std::string_view> && !std::is_same_v<T, SharedString>)
  friend std::strong_ordering operator<=>(const SharedString& a, const T& b) {
    return a.view().compare(std::string_view(b)) <=> 0;
  }

 private:
  struct Rep {
    std::atomic<uint32_t> refs{1};
    std::string s;
  };
  void assign(std::string s) {
    if (!s.empty()) rep_ = new Rep{{1}, std::move(s)};
  }
  void release() {
    if (rep_ != nullptr && rep_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete rep_;
    rep_ = nullptr;
  }
  static const std::string& empty_string() {
    static const std::string kEmpty;
    return kEmpty;
  }
  Rep* rep_ = nullptr;
};
// For nlohmann::json (found by argument-dependent lookup): a SharedString is a JSON string.
template <class Json>
void to_json(Json& j, const SharedString& s) {
  j = s.str();
}

}  // namespace attribution
