// ibnetdiscover and YAML topology parsing (docs/fabric.md §1). The ibnetdiscover subset read is
// the default output of infiniband-diags' ibnetdiscover (node blocks of `*guid=` header, node
// line, one line per connected port), with or without -g / -f.
#include "fabric/topology.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "attribution/codec.h"

namespace attribution::fabric {
namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// "0x7CFE…" or "7cfe…" → "0x7cfe…" without leading zeros ("0x0" for zero); "" when not hex.
std::string norm_guid(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return "";
  for (char c : s)
    if (!is_hex(c)) return "";
  while (s.size() > 1 && s.front() == '0') s.remove_prefix(1);
  std::string out = "0x";
  for (char c : s) out += static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
  return out;
}

// A small cursor over one line.
struct Cursor {
  std::string_view s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  }
  bool eat(char c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool eat(std::string_view lit) {
    if (s.substr(i, lit.size()) == lit) {
      i += lit.size();
      return true;
    }
    return false;
  }
  bool integer(int& out) {
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9' && j - i < 9) ++j;
    if (j == i) return false;
    std::from_chars(s.data() + i, s.data() + j, out);
    i = j;
    return true;
  }
  std::string_view hex() {
    size_t j = i;
    while (j < s.size() && is_hex(s[j])) ++j;
    auto out = s.substr(i, j - i);
    i = j;
    return out;
  }
  // "…" without escapes; false when unterminated.
  bool quoted(std::string_view& out) {
    if (!eat('"')) return false;
    size_t j = s.find('"', i);
    if (j == std::string_view::npos) return false;
    out = s.substr(i, j - i);
    i = j + 1;
    return true;
  }
  bool done() const { return i >= s.size(); }
  std::string_view rest() const { return i < s.size() ? s.substr(i) : std::string_view(); }
};

// `"S-7cfe900300a1b2c0"` → type and GUID.
bool node_ref(Cursor& c, char& type, std::string& guid) {
  std::string_view q;
  if (!c.quoted(q) || q.size() < 3 || q[1] != '-') return false;
  type = q[0];
  if (type != 'S' && type != 'H' && type != 'R') return false;
  guid = norm_guid(q.substr(2));
  return !guid.empty();
}

// "[ext 3]" after a port number (ibnetdiscover -g).
void skip_ext(Cursor& c) {
  if (c.eat("[ext ")) {
    size_t j = c.s.find(']', c.i);
    c.i = j == std::string_view::npos ? c.s.size() : j + 1;
  }
}

// From a port line's comment: the last "lid N <width><speed>" (the peer's LID and the link's rate).
void link_rate(std::string_view comment, int& lid, std::string& width, std::string& speed) {
  size_t at = comment.rfind("lid ");
  if (at == std::string_view::npos) return;
  Cursor c{comment, at + 4};
  if (!c.integer(lid)) return;
  c.ws();
  std::string_view tok = c.rest();
  size_t end = tok.find_first_of(" \t");
  if (end != std::string_view::npos) tok = tok.substr(0, end);
  size_t x = tok.find('x');
  if (x != std::string_view::npos && x > 0 && x <= 2 && std::all_of(tok.begin(), tok.begin() + x, [](char ch) { return ch >= '0' && ch <= '9'; })) {
    width = std::string(tok.substr(0, x + 1));
    speed = std::string(tok.substr(x + 1));
  } else if (!tok.empty()) {
    speed = std::string(tok);
  }
}

// Offset of the first byte that is not part of valid UTF-8 (RFC 3629: no overlong forms, no UTF-16
// surrogates, nothing above U+10FFFF — what the JSON writer accepts), or npos.
size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      n = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    }
    if (n == 0 || i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k) {
      unsigned char b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b >> 6) != 0x2) return i;
    }
    i += n;
  }
  return std::string_view::npos;
}

// Input that is not UTF-8 cannot become a JSON document: an error at its line.
bool utf8_or_error(const std::string& file, std::string_view text, std::vector<InputError>& errors) {
  size_t at = invalid_utf8_at(text);
  if (at == std::string_view::npos) return true;
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  errors.push_back({file, line, fmt::format("not valid UTF-8 (byte {} of the file)", at + 1)});
  return false;
}

}  // namespace

std::string InputError::to_string() const {
  return line > 0 ? fmt::format("{}:{}: {}", file, line, message) : fmt::format("{}: {}", file, message);
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string LinkEnd::id() const {
  return is_switch() ? fmt::format("{}/{}", sw, port) : fmt::format("{}/{}/{}", host, hca, port);
}

bool looks_like_yaml(std::string_view text) {
  size_t p = 0;
  while (p < text.size()) {
    size_t e = text.find('\n', p);
    std::string_view line = trim(text.substr(p, e == std::string_view::npos ? std::string_view::npos : e - p));
    p = e == std::string_view::npos ? text.size() : e + 1;
    if (line.empty() || line[0] == '#' || line == "---") continue;
    for (std::string_view key : {"version:", "switches:", "hcas:", "hosts:", "nvlink_domains:", "roce:", "valid_from:"})
      if (line.substr(0, key.size()) == key) return true;
    return false;
  }
  return false;
}

bool TopologyBuilder::add_file(const std::string& file, std::string_view text, std::vector<InputError>& errors) {
  return looks_like_yaml(text) ? add_yaml(file, text, errors) : add_ibnetdiscover(file, text, errors);
}

bool TopologyBuilder::add_ibnetdiscover(const std::string& file, std::string_view text,
                                        std::vector<InputError>& errors) {
  if (!utf8_or_error(file, text, errors)) return false;
  size_t errors_before = errors.size();
  auto err = [&](int line, std::string msg) { errors.push_back({file, line, std::move(msg)}); };
  std::map<std::string, IbNode> nodes;
  IbNode* current = nullptr;
  std::string pending_guid;
  char pending_type = 0;
  int pending_line = 0;
  int line_no = 0;
  size_t p = 0;
  bool any_node = false;
  while (p < text.size()) {
    size_t e = text.find('\n', p);
    std::string_view raw = text.substr(p, e == std::string_view::npos ? std::string_view::npos : e - p);
    p = e == std::string_view::npos ? text.size() : e + 1;
    ++line_no;
    if (errors.size() - errors_before >= 20) break;
    std::string_view line = trim(raw);
    if (line.empty()) {
      current = nullptr;
      continue;
    }
    if (line[0] == '#') continue;
    if (line.substr(0, 7) == "vendid=" || line.substr(0, 6) == "devid=" || line.substr(0, 11) == "sysimgguid=" ||
        line.substr(0, 8) == "Chassis " || line.substr(0, 9) == "Hostname:" || line == "Non-Chassis Nodes")
      continue;
    auto guid_line = [&](std::string_view key, char type) {
      if (line.substr(0, key.size()) != key) return false;
      Cursor c{line, key.size()};
      c.eat("0x");
      std::string g = norm_guid(c.hex());
      if (g.empty()) {
        err(line_no, fmt::format("'{}' without a GUID", key.substr(0, key.size() - 1)));
      } else {
        if (!pending_guid.empty())
          err(pending_line, fmt::format("{} {} has no node line", pending_type == 'S' ? "switch" : "node", pending_guid));
        pending_guid = g;
        pending_type = type;
        pending_line = line_no;
      }
      current = nullptr;
      return true;
    };
    if (guid_line("switchguid=", 'S') || guid_line("caguid=", 'H') || guid_line("rtguid=", 'R')) continue;
    if (line.substr(0, 7) == "Switch " || line.substr(0, 7) == "Switch\t" || line.substr(0, 3) == "Ca " ||
        line.substr(0, 3) == "Ca\t" || line.substr(0, 3) == "Rt " || line.substr(0, 3) == "Rt\t") {
      Cursor c{line, line[0] == 'S' ? size_t{6} : size_t{2}};
      IbNode n;
      c.ws();
      std::string guid;
      char type = 0;
      if (!c.integer(n.nports) || (c.ws(), !node_ref(c, type, guid))) {
        err(line_no, "node line is not '<Switch|Ca|Rt> <ports> \"<S|H|R>-<guid>\" # \"<description>\"'");
        continue;
      }
      if (pending_guid.empty()) {
        err(line_no, fmt::format("node line for {} without a preceding switchguid=/caguid= line", guid));
      } else if (pending_guid != guid) {
        err(line_no, fmt::format("node line names {} but the block's GUID line (line {}) says {}", guid, pending_line,
                                 pending_guid));
      }
      pending_guid.clear();
      n.type = type;
      n.guid = guid;
      n.file = file;
      n.line = line_no;
      c.ws();
      if (c.eat('#')) {
        c.ws();
        std::string_view desc;
        if (c.quoted(desc)) n.desc = std::string(trim(desc));
        std::string_view rest = c.rest();
        size_t l = rest.find("lid ");
        if (l != std::string_view::npos) {
          Cursor lc{rest, l + 4};
          lc.integer(n.lid);
        }
      }
      auto [it, inserted] = nodes.emplace(guid, std::move(n));
      if (!inserted) {
        err(line_no, fmt::format("node {} listed twice (first at line {})", guid, it->second.line));
        current = nullptr;
        continue;
      }
      current = &it->second;
      any_node = true;
      continue;
    }
    if (line[0] == '[') {
      if (current == nullptr) {
        err(line_no, "port line outside a node block (no Switch/Ca line before it)");
        continue;
      }
      Cursor c{line, 1};
      IbNode::Port port;
      port.line = line_no;
      if (!c.integer(port.port) || !c.eat(']')) {
        err(line_no, "port line does not start with '[<port>]'");
        continue;
      }
      skip_ext(c);
      if (c.eat('(')) {
        port.guid = norm_guid(c.hex());
        if (!c.eat(')') || port.guid.empty()) {
          err(line_no, "bad port GUID in '(…)'");
          continue;
        }
      }
      c.ws();
      if (!node_ref(c, port.peer_type, port.peer_guid) || !c.eat('[') || !c.integer(port.peer_port) || !c.eat(']')) {
        err(line_no, "port line has no peer '\"<S|H|R>-<guid>\"[<port>]' (truncated line?)");
        continue;
      }
      skip_ext(c);
      c.ws();
      if (c.eat('(')) {
        port.peer_port_guid = norm_guid(c.hex());
        if (!c.eat(')') || port.peer_port_guid.empty()) {
          err(line_no, "bad peer port GUID in '(…)'");
          continue;
        }
      }
      c.ws();
      if (c.eat('#')) {
        std::string_view comment = c.rest();
        if (current->type != 'S') {
          size_t l = comment.find("lid ");
          if (l != std::string_view::npos) {
            Cursor lc{comment, l + 4};
            lc.integer(port.lid);
          }
        }
        link_rate(comment, port.peer_lid, port.width, port.speed);
      } else if (!c.done()) {
        err(line_no, fmt::format("unexpected text after the peer: '{}'", c.rest().substr(0, 40)));
        continue;
      }
      if (port.port <= 0 || (current->nports > 0 && port.port > current->nports)) {
        err(line_no, fmt::format("port {} out of range (the node declares {} ports)", port.port, current->nports));
        continue;
      }
      auto [it, inserted] = current->ports.emplace(port.port, port);
      if (!inserted) {
        err(line_no, fmt::format("port {} of {} listed twice (first at line {})", port.port, current->guid,
                                 it->second.line));
      }
      continue;
    }
    err(line_no, fmt::format("not ibnetdiscover output: '{}'", line.substr(0, 60)));
  }
  if (!pending_guid.empty())
    err(pending_line, fmt::format("truncated? the file ends after the GUID line of {} (no node line)", pending_guid));
  if (!any_node && errors.size() == errors_before) err(0, "no Switch/Ca node found (empty or not ibnetdiscover output)");
  // Every link must be listed from both ends: a referenced node without a block, or a port the
  // peer does not list back, is what a truncated (or hand-edited) file looks like.
  if (errors.size() == errors_before) {
    for (const auto& [guid, n] : nodes) {
      for (const auto& [pn, port] : n.ports) {
        auto peer = nodes.find(port.peer_guid);
        if (peer == nodes.end()) {
          err(port.line, fmt::format("truncated? {} (referenced here as the peer of port {}) has no block in the file",
                                     port.peer_guid, pn));
          continue;
        }
        auto back = peer->second.ports.find(port.peer_port);
        if (back == peer->second.ports.end()) {
          err(port.line, fmt::format("truncated? port {} of {} (the peer of port {} here) is not listed in its block "
                                     "(line {})",
                                     port.peer_port, port.peer_guid, pn, peer->second.line));
        } else if (back->second.peer_guid != guid || back->second.peer_port != pn) {
          err(port.line, fmt::format("link mismatch: port {} here → {}[{}], but line {} says {}[{}] → {}[{}]", pn,
                                     port.peer_guid, port.peer_port, back->second.line, port.peer_guid,
                                     port.peer_port, back->second.peer_guid, back->second.peer_port));
        }
        if (errors.size() - errors_before >= 20) break;
      }
    }
  }
  if (errors.size() != errors_before) return false;
  for (auto& [guid, n] : nodes) {
    auto [it, inserted] = ib_nodes_.emplace(guid, std::move(n));
    if (!inserted) {
      errors.push_back({file, it->second.line, fmt::format("node {} also in {}:{}", guid, it->second.file, it->second.line)});
    }
  }
  sources_.push_back(file);
  return errors.size() == errors_before;
}

bool TopologyBuilder::add_yaml(const std::string& file, std::string_view text, std::vector<InputError>& errors) {
  if (!utf8_or_error(file, text, errors)) return false;
  size_t errors_before = errors.size();
  auto err = [&](const YAML::Node& at, std::string msg) {
    errors.push_back({file, at.IsDefined() ? at.Mark().line + 1 : 0, std::move(msg)});
  };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    errors.push_back({file, e.mark.line + 1, e.msg});
    return false;
  }
  if (!root.IsMap()) {
    errors.push_back({file, 1, "a topology YAML is a mapping (version, switches, hcas, hosts, nvlink_domains, roce)"});
    return false;
  }
  auto check_keys = [&](const YAML::Node& n, std::initializer_list<std::string_view> keys, std::string_view what) {
    if (!n.IsMap()) {
      err(n, fmt::format("{} must be a mapping", what));
      return false;
    }
    bool ok = true;
    for (const auto& kv : n) {
      std::string k = kv.first.Scalar();
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        err(kv.first, fmt::format("unknown key '{}' in {}", k, what));
        ok = false;
      }
    }
    return ok;
  };
  auto scalar = [&](const YAML::Node& n, std::string_view what, std::string& out) {
    if (!n.IsScalar()) {
      err(n, fmt::format("{} must be a scalar", what));
      return false;
    }
    out = n.Scalar();
    return true;
  };
  auto integer = [&](const YAML::Node& n, std::string_view what, int& out) {
    std::string s;
    if (!scalar(n, what, s)) return false;
    auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || out < 0) {
      err(n, fmt::format("{} must be a non-negative integer, not '{}'", what, s));
      return false;
    }
    return true;
  };
  auto strings = [&](const YAML::Node& n, std::string_view what, std::vector<std::string>& out) {
    if (!n.IsSequence()) {
      err(n, fmt::format("{} must be a list", what));
      return false;
    }
    for (const auto& v : n) {
      std::string s;
      if (!scalar(v, what, s)) return false;
      out.push_back(s);
    }
    return true;
  };
  static const std::set<std::string> kTiers = {"leaf", "spine", "core", ""};
  if (!check_keys(root, {"version", "valid_from", "switches", "hcas", "hosts", "nvlink_domains", "roce"}, "the topology"))
    return false;
  if (auto v = root["version"]) {
    std::string s;
    if (scalar(v, "version", s) && s != "1") err(v, fmt::format("version must be 1, not '{}'", s));
  }
  if (auto v = root["valid_from"]) {
    std::string s;
    if (scalar(v, "valid_from", s)) {
      auto t = parse_rfc3339(s);
      if (!t.ok()) err(v, fmt::format("valid_from: not an RFC 3339 time: '{}'", s));
      else yaml_valid_from_ = t.value;
    }
  }
  if (auto sw = root["switches"]) {
    if (!sw.IsMap()) err(sw, "switches must be a mapping of GUID or name → {name, tier}");
    else
      for (const auto& kv : sw) {
        std::string key = kv.first.Scalar();
        if (!check_keys(kv.second, {"name", "tier"}, "a switch")) continue;
        std::string name, tier;
        if (kv.second["name"]) scalar(kv.second["name"], "name", name);
        if (kv.second["tier"]) scalar(kv.second["tier"], "tier", tier);
        if (!kTiers.count(tier)) err(kv.second["tier"], fmt::format("tier must be leaf, spine or core, not '{}'", tier));
        std::string g = norm_guid(key);
        std::string k = key.rfind("0x", 0) == 0 && !g.empty() ? g : key;
        if (!switch_overrides_.emplace(k, std::make_pair(name, tier)).second)
          err(kv.first, fmt::format("switch '{}' listed twice", key));
      }
  }
  if (auto h = root["hcas"]) {
    if (!h.IsMap()) err(h, "hcas must be a mapping of GUID → {host, hca}");
    else
      for (const auto& kv : h) {
        std::string g = norm_guid(kv.first.Scalar());
        if (g.empty()) {
          err(kv.first, fmt::format("hcas: '{}' is not a GUID", kv.first.Scalar()));
          continue;
        }
        if (!check_keys(kv.second, {"host", "hca"}, "an HCA")) continue;
        std::string host, hca;
        if (!kv.second["host"] || !scalar(kv.second["host"], "host", host) || host.empty()) {
          err(kv.second, "an HCA needs 'host'");
          continue;
        }
        if (kv.second["hca"]) scalar(kv.second["hca"], "hca", hca);
        if (!hca_overrides_.emplace(g, std::make_pair(host, hca)).second)
          err(kv.first, fmt::format("HCA {} listed twice", g));
      }
  }
  if (auto hs = root["hosts"]) {
    if (!hs.IsMap()) err(hs, "hosts must be a mapping of host name → {ips, gids, lids, ifaces}");
    else
      for (const auto& kv : hs) {
        std::string host = kv.first.Scalar();
        if (!check_keys(kv.second, {"ips", "gids", "lids", "ifaces"}, fmt::format("host '{}'", host))) continue;
        YamlHost yh;
        yh.file = file;
        yh.line = kv.first.Mark().line + 1;
        if (kv.second["ips"]) strings(kv.second["ips"], "ips", yh.ips);
        if (kv.second["gids"]) strings(kv.second["gids"], "gids", yh.gids);
        for (const auto& ip : yh.ips) {
          bool ok = !ip.empty() && ip.find_first_not_of("0123456789abcdefABCDEF.:") == std::string::npos;
          if (!ok) err(kv.second["ips"], fmt::format("host '{}': '{}' is not an IP address", host, ip));
        }
        if (auto l = kv.second["lids"]) {
          if (!l.IsSequence()) err(l, "lids must be a list");
          else
            for (const auto& v : l) {
              int lid = 0;
              if (integer(v, "lid", lid)) yh.lids.push_back(lid);
            }
        }
        if (auto f = kv.second["ifaces"]) {
          if (!f.IsMap()) err(f, "ifaces must be a mapping of netdev → HCA");
          else
            for (const auto& iv : f) yh.ifaces[iv.first.Scalar()] = iv.second.Scalar();
        }
        if (!yaml_hosts_.emplace(host, yh).second) err(kv.first, fmt::format("host '{}' listed twice", host));
      }
  }
  if (auto ds = root["nvlink_domains"]) {
    if (!ds.IsSequence()) err(ds, "nvlink_domains must be a list of {name, hosts}");
    else
      for (const auto& d : ds) {
        if (!check_keys(d, {"name", "hosts"}, "an NVLink domain")) continue;
        NvlinkDomain nd;
        if (!d["name"] || !scalar(d["name"], "name", nd.name) || nd.name.empty()) {
          err(d, "an NVLink domain needs 'name'");
          continue;
        }
        if (!d["hosts"] || !strings(d["hosts"], "hosts", nd.hosts)) {
          err(d, fmt::format("NVLink domain '{}' needs 'hosts' (a list)", nd.name));
          continue;
        }
        yaml_domains_.push_back(std::move(nd));
      }
  }
  if (auto r = root["roce"]) {
    if (check_keys(r, {"links", "tiers"}, "roce")) {
      if (auto ls = r["links"]) {
        if (!ls.IsSequence()) err(ls, "roce.links must be a list");
        else
          for (const auto& l : ls) {
            if (!check_keys(l, {"switch", "port", "host", "hca", "hca_port", "iface", "speed", "peer_switch", "peer_port"},
                            "a RoCE link"))
              continue;
            YamlLink yl;
            yl.file = file;
            yl.line = l.Mark().line + 1;
            bool ok = l["switch"] && scalar(l["switch"], "switch", yl.sw) && !yl.sw.empty() && l["port"] &&
                      integer(l["port"], "port", yl.port);
            if (!ok) {
              err(l, "a RoCE link needs 'switch' and 'port'");
              continue;
            }
            if (l["host"]) scalar(l["host"], "host", yl.host);
            if (l["hca"]) scalar(l["hca"], "hca", yl.hca);
            if (l["hca_port"]) integer(l["hca_port"], "hca_port", yl.hca_port);
            if (l["iface"]) scalar(l["iface"], "iface", yl.iface);
            if (l["speed"]) scalar(l["speed"], "speed", yl.speed);
            if (l["peer_switch"]) scalar(l["peer_switch"], "peer_switch", yl.peer_switch);
            if (l["peer_port"]) integer(l["peer_port"], "peer_port", yl.peer_port);
            if (yl.host.empty() == yl.peer_switch.empty()) {
              err(l, "a RoCE link names either 'host' (with 'hca' or 'iface') or 'peer_switch' and 'peer_port'");
              continue;
            }
            if (!yl.host.empty() && yl.hca.empty()) yl.hca = yl.iface;
            if (!yl.host.empty() && yl.hca.empty()) {
              err(l, "a RoCE host link needs 'hca' or 'iface'");
              continue;
            }
            if (!yl.peer_switch.empty() && yl.peer_port <= 0) {
              err(l, "a RoCE switch link needs 'peer_port'");
              continue;
            }
            yaml_links_.push_back(std::move(yl));
          }
      }
      if (auto t = r["tiers"]) {
        if (!t.IsMap()) err(t, "roce.tiers must be a mapping of switch → tier");
        else
          for (const auto& kv : t) {
            std::string tier = kv.second.Scalar();
            if (!kTiers.count(tier)) err(kv.second, fmt::format("tier must be leaf, spine or core, not '{}'", tier));
            yaml_tiers_[kv.first.Scalar()] = tier;
          }
      }
    }
  }
  if (errors.size() != errors_before) return false;
  sources_.push_back(file);
  return true;
}

bool TopologyBuilder::build(Topology& out, std::vector<InputError>& errors) const {
  size_t errors_before = errors.size();
  out = Topology{};
  out.sources = sources_;
  std::map<std::string, Switch> switches;            // by name
  std::map<std::string, std::string> switch_by_guid;  // guid → name
  std::map<std::string, Host> hosts;
  std::map<std::string, Link> links;
  std::map<std::string, std::string> port_owner;  // end id → where it was defined (duplicates are errors)

  auto switch_name = [&](const IbNode& n) {
    auto o = switch_overrides_.find(n.guid);
    if (o == switch_overrides_.end() && !n.desc.empty()) o = switch_overrides_.find(n.desc);
    if (o != switch_overrides_.end() && !o->second.first.empty()) return o->second.first;
    return n.desc.empty() ? fmt::format("S-{}", n.guid.substr(2)) : n.desc;
  };
  for (const auto& [guid, n] : ib_nodes_) {
    if (n.type != 'S') continue;
    Switch s;
    s.name = switch_name(n);
    s.guid = guid;
    s.lid = n.lid;
    s.ports = n.nports;
    auto o = switch_overrides_.find(guid);
    if (o == switch_overrides_.end() && !n.desc.empty()) o = switch_overrides_.find(n.desc);
    if (o != switch_overrides_.end()) s.tier = o->second.second;
    if (switches.count(s.name)) {
      errors.push_back({n.file, n.line, fmt::format("two switches are named '{}' ({} and {}); name them in the YAML",
                                                     s.name, switches[s.name].guid, guid)});
      continue;
    }
    switch_by_guid[guid] = s.name;
    switches[s.name] = s;
  }
  // A CA port → (host, hca): the YAML by port or node GUID, else the node description "<host> <hca>".
  auto ca_end = [&](const IbNode& n, const IbNode::Port& p, LinkEnd& end) {
    std::string host, hca;
    for (const std::string& g : {p.guid, n.guid}) {
      auto o = hca_overrides_.find(g);
      if (!g.empty() && o != hca_overrides_.end()) {
        host = o->second.first;
        hca = o->second.second;
        break;
      }
    }
    if (host.empty()) {
      std::string_view d = n.desc;
      size_t sp = d.find(' ');
      if (sp != std::string_view::npos && d.find(' ', sp + 1) == std::string_view::npos && sp > 0 && sp + 1 < d.size()) {
        host = std::string(d.substr(0, sp));
        if (hca.empty()) hca = std::string(d.substr(sp + 1));
      } else {
        host = fmt::format("H-{}", n.guid.substr(2));
      }
    }
    if (hca.empty()) hca = "ca";
    end.host = host;
    end.hca = hca;
    end.port = p.port;
  };
  for (const auto& [guid, n] : ib_nodes_) {
    for (const auto& [pn, p] : n.ports) {
      auto peer_it = ib_nodes_.find(p.peer_guid);
      if (peer_it == ib_nodes_.end()) continue;  // checked at parse time
      const IbNode& peer = peer_it->second;
      LinkEnd a, b;
      if (n.type == 'S') {
        a.sw = switch_by_guid[guid];
        a.port = pn;
      } else {
        ca_end(n, p, a);
      }
      if (peer.type == 'S') {
        b.sw = switch_by_guid[p.peer_guid];
        b.port = p.peer_port;
      } else {
        auto back = peer.ports.find(p.peer_port);
        if (back == peer.ports.end()) continue;
        ca_end(peer, back->second, b);
      }
      if ((a.is_switch() && a.sw.empty()) || (b.is_switch() && b.sw.empty())) continue;
      if (!a.is_switch() && !b.is_switch()) continue;  // CA–CA back-to-back: not a fabric link
      if (b.id() < a.id()) std::swap(a, b);
      Link l;
      l.id = "link:" + a.id() + "~" + b.id();
      l.kind = a.is_switch() && b.is_switch() ? "switch" : "host";
      l.a = a;
      l.b = b;
      l.width = p.width;
      l.speed = p.speed;
      links.emplace(l.id, l);
      if (n.type != 'S') {  // the CA's own block gives its port's GUID and LID
        const LinkEnd& e = a.is_switch() ? b : a;
        Host& h = hosts[e.host];
        h.host = e.host;
        bool known = std::any_of(h.ports.begin(), h.ports.end(),
                                 [&](const HostPort& hp) { return hp.hca == e.hca && hp.port == e.port; });
        if (!known) h.ports.push_back({e.hca, e.port, p.guid, p.lid, ""});
      }
    }
  }
  // A host port or switch port may carry one link only (ibnetdiscover guarantees it per file; two
  // files or a YAML link can break it).
  for (const auto& [id, l] : links) {
    for (const LinkEnd* e : {&l.a, &l.b}) {
      auto [it, inserted] = port_owner.emplace(e->id(), id);
      if (!inserted && it->second != id)
        errors.push_back({sources_.empty() ? "" : sources_.front(), 0,
                          fmt::format("port {} has two links: {} and {}", e->id(), it->second, id)});
    }
  }
  for (const YamlLink& yl : yaml_links_) {
    Switch& s = switches[yl.sw];
    s.name = yl.sw;
    LinkEnd a, b;
    a.sw = yl.sw;
    a.port = yl.port;
    if (!yl.host.empty()) {
      b.host = yl.host;
      b.hca = yl.hca;
      b.port = yl.hca_port;
    } else {
      Switch& ps = switches[yl.peer_switch];
      ps.name = yl.peer_switch;
      b.sw = yl.peer_switch;
      b.port = yl.peer_port;
    }
    if (b.id() < a.id()) std::swap(a, b);
    Link l;
    l.id = "link:" + a.id() + "~" + b.id();
    l.kind = a.is_switch() && b.is_switch() ? "switch" : "host";
    l.a = a;
    l.b = b;
    l.speed = yl.speed;
    bool dup = false;
    for (const LinkEnd* e : {&a, &b}) {
      auto [it, inserted] = port_owner.emplace(e->id(), l.id);
      if (!inserted) {
        errors.push_back({yl.file, yl.line, fmt::format("port {} listed twice (already in {})", e->id(), it->second)});
        dup = true;
      }
    }
    if (dup) continue;
    links.emplace(l.id, l);
    if (!yl.host.empty()) {
      Host& h = hosts[yl.host];
      h.host = yl.host;
      HostPort hp;
      hp.hca = yl.hca;
      hp.port = yl.hca_port;
      hp.iface = yl.iface;
      h.ports.push_back(hp);
    }
  }
  for (const auto& [name, yh] : yaml_hosts_) {
    Host& h = hosts[name];
    h.host = name;
    h.ips = yh.ips;
    h.gids = yh.gids;
    h.lids = yh.lids;
    for (auto& hp : h.ports) {
      for (const auto& [iface, hca] : yh.ifaces)
        if (hca == hp.hca && hp.iface.empty()) hp.iface = iface;
    }
  }
  std::map<std::string, NvlinkDomain> domains;
  for (const NvlinkDomain& d : yaml_domains_) {
    if (domains.count(d.name)) {
      errors.push_back({sources_.empty() ? "" : sources_.back(), 0, fmt::format("NVLink domain '{}' listed twice", d.name)});
      continue;
    }
    NvlinkDomain nd = d;
    std::sort(nd.hosts.begin(), nd.hosts.end());
    nd.hosts.erase(std::unique(nd.hosts.begin(), nd.hosts.end()), nd.hosts.end());
    for (const auto& host : nd.hosts) {
      Host& h = hosts[host];
      h.host = host;
      if (!h.nvlink_domain.empty() && h.nvlink_domain != nd.name)
        errors.push_back({sources_.empty() ? "" : sources_.back(), 0,
                          fmt::format("host '{}' is in two NVLink domains ({} and {})", host, h.nvlink_domain, nd.name)});
      h.nvlink_domain = nd.name;
    }
    domains[nd.name] = std::move(nd);
  }
  // Tiers: the YAML's, else leaf for a switch with host links, spine for one with only switch links.
  std::set<std::string> has_host_link, has_switch_link;
  for (const auto& [id, l] : links) {
    for (const LinkEnd* e : {&l.a, &l.b}) {
      if (!e->is_switch()) continue;
      (l.kind == "host" ? has_host_link : has_switch_link).insert(e->sw);
    }
  }
  for (auto& [name, s] : switches) {
    if (auto t = yaml_tiers_.find(name); t != yaml_tiers_.end()) s.tier = t->second;
    if (s.tier.empty()) s.tier = has_host_link.count(name) ? "leaf" : has_switch_link.count(name) ? "spine" : "";
  }
  if (errors.size() != errors_before) return false;
  for (auto& [k, s] : switches) out.switches.push_back(s);
  for (auto& [k, h] : hosts) {
    std::sort(h.ports.begin(), h.ports.end(),
              [](const HostPort& x, const HostPort& y) { return std::tie(x.hca, x.port) < std::tie(y.hca, y.port); });
    out.hosts.push_back(h);
  }
  for (auto& [k, l] : links) out.links.push_back(l);
  for (auto& [k, d] : domains) out.nvlink_domains.push_back(d);
  out.digest = fmt::format("fnv1a64:{:016x}", fnv1a64(out.to_json(false).dump()));
  return true;
}

json Topology::to_json(bool with_id) const {
  json j;
  j["schema"] = "attribution.topology/v1";
  if (with_id) j["id"] = id;
  j["valid_from"] = valid_from_ns == kNoValidFrom ? json(nullptr) : json(format_rfc3339(valid_from_ns));
  j["valid_from_ns"] = valid_from_ns == kNoValidFrom ? json(nullptr) : json(valid_from_ns);
  j["imported_at"] = imported_at;
  j["sources"] = sources;
  j["digest"] = digest;
  json sw = json::array();
  for (const auto& s : switches)
    sw.push_back({{"name", s.name}, {"guid", s.guid}, {"tier", s.tier}, {"lid", s.lid}, {"ports", s.ports}});
  j["switches"] = sw;
  json hs = json::array();
  for (const auto& h : hosts) {
    json ports = json::array();
    for (const auto& p : h.ports) {
      json pj = {{"hca", p.hca}, {"port", p.port}, {"guid", p.guid}, {"lid", p.lid}};
      if (!p.iface.empty()) pj["iface"] = p.iface;
      ports.push_back(pj);
    }
    hs.push_back({{"host", h.host}, {"ports", ports}, {"ips", h.ips}, {"gids", h.gids}, {"lids", h.lids},
                  {"nvlink_domain", h.nvlink_domain.empty() ? json(nullptr) : json(h.nvlink_domain)}});
  }
  j["hosts"] = hs;
  auto end_json = [](const LinkEnd& e) {
    return e.is_switch() ? json{{"switch", e.sw}, {"port", e.port}} : json{{"host", e.host}, {"hca", e.hca}, {"port", e.port}};
  };
  json ls = json::array();
  for (const auto& l : links)
    ls.push_back({{"id", l.id}, {"kind", l.kind}, {"a", end_json(l.a)}, {"b", end_json(l.b)}, {"width", l.width},
                  {"speed", l.speed}});
  j["links"] = ls;
  json ds = json::array();
  for (const auto& d : nvlink_domains) ds.push_back({{"name", d.name}, {"hosts", d.hosts}});
  j["nvlink_domains"] = ds;
  return j;
}

bool Topology::from_json(const json& j, Topology& out, std::string& error) {
  try {
    out = Topology{};
    if (j.value("schema", "") != "attribution.topology/v1") {
      error = "schema: not attribution.topology/v1";
      return false;
    }
    out.id = j.value("id", int64_t{0});
    if (j.contains("valid_from_ns") && j["valid_from_ns"].is_number_integer()) out.valid_from_ns = j["valid_from_ns"].get<int64_t>();
    out.imported_at = j.value("imported_at", "");
    out.sources = j.value("sources", std::vector<std::string>{});
    out.digest = j.value("digest", "");
    for (const auto& s : j.at("switches"))
      out.switches.push_back({s.at("name").get<std::string>(), s.value("guid", ""), s.value("tier", ""), s.value("lid", 0),
                              s.value("ports", 0)});
    for (const auto& h : j.at("hosts")) {
      Host host;
      host.host = h.at("host").get<std::string>();
      for (const auto& p : h.at("ports"))
        host.ports.push_back({p.at("hca").get<std::string>(), p.at("port").get<int>(), p.value("guid", ""), p.value("lid", 0),
                              p.value("iface", "")});
      host.ips = h.value("ips", std::vector<std::string>{});
      host.gids = h.value("gids", std::vector<std::string>{});
      host.lids = h.value("lids", std::vector<int>{});
      if (h.contains("nvlink_domain") && h["nvlink_domain"].is_string()) host.nvlink_domain = h["nvlink_domain"];
      out.hosts.push_back(std::move(host));
    }
    auto end_of = [](const json& e) {
      LinkEnd le;
      if (e.contains("switch")) le.sw = e.at("switch").get<std::string>();
      else {
        le.host = e.at("host").get<std::string>();
        le.hca = e.at("hca").get<std::string>();
      }
      le.port = e.at("port").get<int>();
      return le;
    };
    for (const auto& l : j.at("links"))
      out.links.push_back({l.at("id").get<std::string>(), l.at("kind").get<std::string>(), end_of(l.at("a")), end_of(l.at("b")),
                           l.value("width", ""), l.value("speed", "")});
    for (const auto& d : j.at("nvlink_domains"))
      out.nvlink_domains.push_back({d.at("name").get<std::string>(), d.at("hosts").get<std::vector<std::string>>()});
    return true;
  } catch (const json::exception& e) {
    error = e.what();
    return false;
  }
}

std::string Topology::to_text() const {
  std::string s = fmt::format("topology {} valid from {} ({} switches, {} hosts, {} links, {} NVLink domains) from {}\n",
                              id, valid_from_ns == kNoValidFrom ? "-" : format_rfc3339(valid_from_ns), switches.size(),
                              hosts.size(), links.size(), nvlink_domains.size(), fmt::join(sources, ", "));
  for (const auto& sw : switches)
    s += fmt::format("switch {} {} tier {} lid {} ports {}\n", sw.name, sw.guid.empty() ? "-" : sw.guid,
                     sw.tier.empty() ? "-" : sw.tier, sw.lid, sw.ports);
  for (const auto& l : links)
    s += fmt::format("link {} {}{}\n", l.id, l.width, l.speed.empty() ? "" : l.speed);
  for (const auto& d : nvlink_domains) s += fmt::format("nvlink_domain {}: {}\n", d.name, fmt::join(d.hosts, " "));
  return s;
}

}  // namespace attribution::fabric
