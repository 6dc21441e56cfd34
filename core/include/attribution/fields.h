// Fields: the named captures of one occurrence (name → value), as a flat list sorted by name.
//
// Contract: reads and orders exactly like std::map<std::string, std::string> (find, count, at,
// operator[], insert, emplace, erase, iteration in name order, ==, <=>), so code written against
// the map reads the same. Unlike the map, it is one allocation for the whole list instead of a tree
// node per field: a 16,384-rank job keeps 345k captured fields in 112k symptom records, which as
// map nodes were a fifth of its heap. Lists are short (a handful of fields), so lookups are a binary
// search and inserts a shift. Iterators are invalidated by any insert or erase; the element's name
// must not be changed through an iterator (it would break the order). A name is a SharedString
// (reads as a const std::string&): the scanner gives every record of a rule the same copies of its
// capture names, and a name passed as a SharedString is kept as that reference.
// Thread-safety: a value type; const access from several threads is safe.
#pragma once

#include <algorithm>
#include <compare>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "attribution/shared_string.h"

namespace attribution {

class Fields {
 public:
  using key_type = SharedString;  // names repeat on every record of a rule: shared, not copied
  using mapped_type = std::string;
  using value_type = std::pair<SharedString, std::string>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;
  using size_type = size_t;

  Fields() = default;
  Fields(std::initializer_list<value_type> init) {
    for (const auto& v : init) insert(v);
  }
  explicit Fields(const std::map<std::string, std::string>& m) {
    items_.reserve(m.size());
    for (const auto& [k, v] : m) items_.emplace_back(k, v);
  }
  template <class It>
  Fields(It first, It last) {
    insert(first, last);
  }

  std::map<std::string, std::string> to_map() const {
    std::map<std::string, std::string> m;
    for (const auto& [k, v] : items_) m.emplace_hint(m.end(), k.str(), v);
    return m;
  }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  const_iterator cbegin() const { return items_.begin(); }
  const_iterator cend() const { return items_.end(); }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  void clear() { items_.clear(); }
  void reserve(size_t n) { items_.reserve(n); }
  // Gives back spare capacity (a record keeps its list for the whole run).
  void shrink_to_fit() { items_.shrink_to_fit(); }

  iterator lower_bound(std::string_view k) {
    return std::lower_bound(items_.begin(), items_.end(), k, key_less);
  }
  const_iterator lower_bound(std::string_view k) const {
    return std::lower_bound(items_.begin(), items_.end(), k, key_less);
  }
  iterator find(std::string_view k) {
    auto it = lower_bound(k);
    return it != items_.end() && it->first == k ? it : items_.end();
  }
  const_iterator find(std::string_view k) const {
    auto it = lower_bound(k);
    return it != items_.end() && it->first == k ? it : items_.end();
  }
  size_t count(std::string_view k) const { return find(k) != end() ? 1 : 0; }
  bool contains(std::string_view k) const { return find(k) != end(); }
  const std::string& at(std::string_view k) const {
    auto it = find(k);
    if (it == end()) throw std::out_of_range("Fields::at: no field " + std::string(k));
    return it->second;
  }
  std::string& at(std::string_view k) {
    auto it = find(k);
    if (it == end()) throw std::out_of_range("Fields::at: no field " + std::string(k));
    return it->second;
  }
  std::string& operator[](std::string_view k) { return try_emplace(k).first->second; }

  template <class... Args>
  std::pair<iterator, bool> try_emplace(std::string_view k, Args&&... args) {
    auto it = lower_bound(k);
    if (it != items_.end() && it->first == k) return {it, false};
    it = items_.emplace(it, std::piecewise_construct, std::forward_as_tuple(k),
                        std::forward_as_tuple(std::forward<Args>(args)...));
    return {it, true};
  }
  template <class K, class V>
  std::pair<iterator, bool> emplace(K&& k, V&& v) {
    const std::string_view name = name_view(k);
    auto it = lower_bound(name);
    if (it != items_.end() && it->first == name) return {it, false};
    it = items_.emplace(it, std::forward<K>(k), std::forward<V>(v));
    return {it, true};
  }
  std::pair<iterator, bool> insert(const value_type& v) { return emplace(v.first, v.second); }
  std::pair<iterator, bool> insert(value_type&& v) { return emplace(std::move(v.first), std::move(v.second)); }
  template <class It>
  void insert(It first, It last) {
    for (; first != last; ++first) emplace(first->first, first->second);
  }
  template <class V>
  std::pair<iterator, bool> insert_or_assign(std::string_view k, V&& v) {
    auto [it, added] = try_emplace(k);
    it->second = std::forward<V>(v);
    return {it, added};
  }
  // The same with a shared name: a new field holds `k` itself, not a copy of its text.
  template <class K, class V>
    requires std::is_same_v<std::remove_cvref_t<K>, SharedString>
  std::pair<iterator, bool> insert_or_assign(const K& k, V&& v) {
    auto it = lower_bound(k.view());
    if (it != items_.end() && it->first == k) {
      it->second = std::forward<V>(v);
      return {it, false};
    }
    it = items_.emplace(it, k, std::forward<V>(v));
    return {it, true};
  }
  iterator erase(const_iterator it) { return items_.erase(it); }
  iterator erase(const_iterator first, const_iterator last) { return items_.erase(first, last); }
  size_t erase(std::string_view k) {
    auto it = find(k);
    if (it == end()) return 0;
    items_.erase(it);
    return 1;
  }
  template <class Pred>
  void erase_if(Pred pred) {
    items_.erase(std::remove_if(items_.begin(), items_.end(), pred), items_.end());
  }

  friend bool operator==(const Fields& a, const Fields& b) { return a.items_ == b.items_; }
  friend std::strong_ordering operator<=>(const Fields& a, const Fields& b) {
    return std::lexicographical_compare_three_way(a.items_.begin(), a.items_.end(), b.items_.begin(),
                                                  b.items_.end());
  }

 private:
  template <class K>
  static std::string_view name_view(const K& k) {
    if constexpr (std::is_same_v<K, SharedString>) {
      return k.view();
    } else {
      return std::string_view(k);
    }
  }
  static bool key_less(const value_type& v, std::string_view k) { return v.first.view() < k; }
  std::vector<value_type> items_;
};

// For nlohmann::json (found by argument-dependent lookup): an object, as the map was.
template <class Json>
void to_json(Json& j, const Fields& f) {
  j = Json::object();
  for (const auto& [k, v] : f) j[k.str()] = v;
}

}  // namespace attribution
