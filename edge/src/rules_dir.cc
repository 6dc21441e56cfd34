#include "attribution/edge/rules_dir.h"
#include "attribution/python_rules.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace attribution::edge {
namespace fs = std::filesystem;

namespace {

// The whole file, or false with "<path>: cannot read" in error.
bool read_whole(const fs::path& path, std::string& text, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("{}: cannot read", path.string());
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

}  // namespace

std::string default_rules_location() {
  if (const char* env = std::getenv("ATTRIBUTION_RULES_DIR"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  std::vector<fs::path> candidates;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "share" / "attribution" / "rules");
    candidates.push_back(exe.parent_path() / "rules");
  }
  candidates.push_back(ATTRIBUTION_SOURCE_RULES_DIR);
  candidates.push_back("/usr/share/attribution/rules");
  for (const auto& c : candidates) {
    if (!fs::is_directory(c, ec)) continue;
    fs::path canonical = fs::weakly_canonical(c, ec);
    return ec || canonical.empty() ? c.string() : canonical.string();
  }
  return ATTRIBUTION_SOURCE_RULES_DIR;
}

std::string resolve_rules_location(const std::string& configured) {
  return configured.empty() ? default_rules_location() : configured;
}

bool read_rule_files(const std::string& location, std::vector<RuleText>& out, std::string& error) {
  std::error_code ec;
  std::vector<fs::path> files;
  // Names are "<dir name>/<path inside it>" (e.g. "rules/gpu.yaml") whatever the directory's
  // location, so the rules digest is the same for the blueprint and the service.
  fs::path base = fs::path(location).lexically_normal();
  if (base.filename().empty()) base = base.parent_path();
  if (fs::is_directory(location, ec)) {
    for (auto it = fs::recursive_directory_iterator(location, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      // rules/inventory/ holds the message inventory (docs/rules.md), not rules.
      if (it.depth() == 0 && it->is_directory() && it->path().filename() == kInventoryDirName) {
        it.disable_recursion_pending();
        continue;
      }
      // YAML rules, Python rules and the site data beside them (docs/rules.md "Python rules").
      auto ext = it->path().extension();
      if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".py" ||
                                    is_rule_data_file(it->path().filename().string())))
        files.push_back(it->path());
    }
    if (ec) {
      error = fmt::format("{}: {}", location, ec.message());
      return false;
    }
    std::sort(files.begin(), files.end());
  } else if (fs::is_regular_file(location, ec)) {
    files.push_back(location);
  } else {
    error = fmt::format("{}: no such rules file or directory", location);
    return false;
  }
  if (files.empty()) {
    error = fmt::format("{}: no *.yaml rule files", location);
    return false;
  }
  for (const auto& f : files) {
    std::string text;
    if (!read_whole(f, text, error)) return false;
    std::string name = fs::is_directory(location, ec)
                           ? (base.filename() / fs::relative(f, location, ec)).string()
                           : f.filename().string();
    out.push_back({name, std::move(text)});
  }
  return true;
}

bool read_inventory_files(const std::string& rules_location, std::vector<RuleText>& out, std::string& error) {
  std::error_code ec;
  fs::path dir = fs::path(rules_location) / kInventoryDirName;
  if (!fs::is_directory(dir, ec)) {
    error = fmt::format("{}: no inventory directory", dir.string());
    return false;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(e.path());
  }
  if (ec) {
    error = fmt::format("{}: {}", dir.string(), ec.message());
    return false;
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::string text;
    if (!read_whole(f, text, error)) return false;
    out.push_back({f.string(), std::move(text)});
  }
  return true;
}

std::string compiled_cache_dir() {
  if (const char* d = std::getenv("ATTRIBUTION_CACHE_DIR"); d != nullptr) return d;  // "" disables
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') return std::string(x) + "/attribution";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return std::string(h) + "/.cache/attribution";
  return "";
}

namespace {

// Compiled Vectorscan databases cached under the rules digest: only the first run after a rules
// change compiles. A stale or foreign cache is detected by the core and ignored.
std::string read_cache(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_cache(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec || bytes.empty()) return;
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << bytes;
    if (!out) return;
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

std::shared_ptr<const RuleSet> load_rules_from(const std::string& location, std::vector<std::string>& errors,
                                               std::vector<std::string>* warnings) {
  std::vector<RuleText> files;
  std::string error;
  if (!read_rule_files(location, files, error)) {
    errors.push_back(error);
    return nullptr;
  }
  std::string cache_dir = compiled_cache_dir();
  fs::path cache_path;
  std::string cached;
  if (!cache_dir.empty()) {
    std::string digest = rules_digest(files);
    cache_path = fs::path(cache_dir) / (digest.substr(digest.find(':') + 1) + ".hsdb");
    cached = read_cache(cache_path);
  }
  LoadResult r = python::load_rules(files, cached);  // YAML and Python rules (core/python)
  // Written when it was missing or could not be used (another format version, another Vectorscan).
  if (r.rules && !cache_path.empty() && !describe(*r.rules).compiled_from_cache)
    write_cache(cache_path, serialize_compiled(*r.rules));
  for (const auto& e : r.errors) errors.push_back(e.to_string());
  if (warnings != nullptr) {
    for (const auto& w : r.warnings) warnings->push_back(w.to_string());
  }
  return r.rules;
}

}  // namespace attribution::edge
