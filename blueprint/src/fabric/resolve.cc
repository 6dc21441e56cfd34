#include "fabric/resolve.h"

#include <fmt/format.h>

#include <algorithm>

namespace attribution::fabric {

std::string normalize_address(std::string_view a) {
  size_t pct = a.find('%');
  if (pct != std::string_view::npos) a = a.substr(0, pct);
  std::string s(a);
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (s.rfind("::ffff:", 0) == 0 && s.find('.') != std::string::npos) s = s.substr(7);
  return s;
}

int TopologyIndex::intern(const std::string& id, const std::string& kind, int link) {
  auto [it, inserted] = by_id_.emplace(id, static_cast<int>(components_.size()));
  if (inserted) components_.push_back({id, kind, link, kind});
  return it->second;
}

TopologyIndex::TopologyIndex(Topology topology) : topology_(std::move(topology)) {
  for (const auto& s : topology_.switches) {
    components_[static_cast<size_t>(intern("switch:" + s.name, "switch", -1))].group = "switch/" + s.tier;
    if (!s.guid.empty()) switch_by_guid_[s.guid] = s.name;
  }
  for (size_t i = 0; i < topology_.links.size(); ++i) {
    const Link& l = topology_.links[i];
    int c = intern(l.id, "link", static_cast<int>(i));
    components_[static_cast<size_t>(c)].group = "link/" + l.kind;
    for (const LinkEnd* e : {&l.a, &l.b}) {
      if (e->is_switch()) {
        switch_port_link_[fmt::format("{}/{}", e->sw, e->port)] = c;
        continue;
      }
      host_links_[e->host].push_back(c);
      hca_port_link_[e->id()] = c;
      hca_links_[e->host + "/" + e->hca].push_back(c);
      const LinkEnd& other = e == &l.a ? l.b : l.a;
      if (other.is_switch()) host_switches_[e->host].push_back(by_id_.at("switch:" + other.sw));
    }
    if (l.kind == "switch") {
      switch_uplinks_[l.a.sw].push_back(c);
      switch_uplinks_[l.b.sw].push_back(c);
      switch_far_[l.a.sw].push_back(by_id_.at("switch:" + l.b.sw));
      switch_far_[l.b.sw].push_back(by_id_.at("switch:" + l.a.sw));
    }
  }
  for (const auto& d : topology_.nvlink_domains) {
    int c = intern("nvlink_domain:" + d.name, "nvlink_domain", -1);
    for (const auto& h : d.hosts) host_domain_[h] = c;
  }
  for (const auto& h : topology_.hosts) {
    peer_host_[normalize_address(h.host)] = h.host;
    for (const auto& ip : h.ips) peer_host_[normalize_address(ip)] = h.host;
    for (const auto& g : h.gids) peer_host_[normalize_address(g)] = h.host;
    for (int lid : h.lids) peer_host_["lid:" + std::to_string(lid)] = h.host;
    for (const auto& p : h.ports) {
      if (p.lid > 0) peer_host_["lid:" + std::to_string(p.lid)] = h.host;
      if (!p.iface.empty()) {
        auto it = hca_port_link_.find(fmt::format("{}/{}/{}", h.host, p.hca, p.port));
        if (it != hca_port_link_.end()) iface_links_[h.host + "/" + p.iface].push_back(it->second);
      }
    }
  }
  auto dedupe = [](auto& m) {
    for (auto& [k, v] : m) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
  };
  dedupe(host_links_);
  dedupe(host_switches_);
  dedupe(hca_links_);
  dedupe(switch_uplinks_);
  dedupe(switch_far_);
}

int TopologyIndex::find(std::string_view component_id) const {
  auto it = by_id_.find(std::string(component_id));
  return it == by_id_.end() ? -1 : it->second;
}

std::string TopologyIndex::host_of_peer(std::string_view peer) const {
  if (peer.empty()) return "";
  auto it = peer_host_.find(normalize_address(peer));
  if (it != peer_host_.end()) return it->second;
  // A host name printed with a domain ("gpu-b.cluster"): try its first label.
  size_t dot = peer.find('.');
  if (dot != std::string_view::npos && dot > 0 && !(peer[0] >= '0' && peer[0] <= '9')) {
    it = peer_host_.find(normalize_address(peer.substr(0, dot)));
    if (it != peer_host_.end()) return it->second;
  }
  return "";
}

void TopologyIndex::attached(const std::string& host, std::vector<int>& out) const {
  if (auto it = host_links_.find(host); it != host_links_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  if (auto it = host_switches_.find(host); it != host_switches_.end())
    out.insert(out.end(), it->second.begin(), it->second.end());
  if (auto it = host_domain_.find(host); it != host_domain_.end()) out.push_back(it->second);
}

void TopologyIndex::crossed(const std::vector<std::string>& hosts, std::vector<int>& out) const {
  out.clear();
  std::vector<int> leaves;
  for (const auto& h : hosts) {
    attached(h, out);
    if (auto it = host_switches_.find(h); it != host_switches_.end()) leaves.insert(leaves.end(), it->second.begin(), it->second.end());
  }
  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
  if (leaves.size() >= 2) {
    for (int leaf : leaves) {
      const std::string& name = components_[leaf].id.substr(7);
      if (auto it = switch_uplinks_.find(name); it != switch_uplinks_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
      if (auto it = switch_far_.find(name); it != switch_far_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

void TopologyIndex::add_host_path(const std::string& host, std::vector<int>& out) const {
  if (auto it = host_links_.find(host); it != host_links_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  if (auto it = host_switches_.find(host); it != host_switches_.end())
    out.insert(out.end(), it->second.begin(), it->second.end());
}

void TopologyIndex::touched(const Location& loc, std::vector<int>& out, std::vector<int>* direct) const {
  size_t start = out.size();
  size_t direct_start = direct ? direct->size() : 0;
  auto field = [&](const char* k) -> const std::string* {
    auto it = loc.fields.find(k);
    return it == loc.fields.end() || it->second.empty() ? nullptr : &it->second;
  };
  // A port named directly names its link (`named`); the switch at either end is on it, not named
  // (one bad port is the link's; a switch is named by several of its ports at once,
  // FleetAnalysis::add).
  auto add_link = [&](int c, bool named = true) {
    out.push_back(c);
    if (named && direct) direct->push_back(c);
    const Link& l = topology_.links[static_cast<size_t>(components_[c].link)];
    for (const LinkEnd* e : {&l.a, &l.b})
      if (e->is_switch()) out.push_back(by_id_.at("switch:" + e->sw));
  };
  // A completion error names the local HCA it was seen on and the peer it was talking to: the path
  // between the two broke, so the local links are on it but not named as the fault.
  const bool towards_peer = field("peer") || field("peer_gid") || field("peer_lid");
  auto add_local_link = [&](int c) { add_link(c, !towards_peer); };
  bool located = false;
  // A switch port named directly.
  if (const std::string* sp = field("switch_port")) {
    std::string sw;
    if (const std::string* g = field("switch_guid")) {
      std::string guid = *g;
      for (char& ch : guid)
        if (ch >= 'A' && ch <= 'F') ch = static_cast<char>(ch - 'A' + 'a');
      if (guid.rfind("0x", 0) != 0) guid = "0x" + guid;
      while (guid.size() > 3 && guid[2] == '0') guid.erase(2, 1);
      if (auto it = switch_by_guid_.find(guid); it != switch_by_guid_.end()) sw = it->second;
    } else if (const std::string* sn = field("switch")) {
      sw = *sn;
    }
    if (!sw.empty()) {
      if (auto it = switch_port_link_.find(sw + "/" + *sp); it != switch_port_link_.end()) {
        add_link(it->second);
        located = true;
      } else if (int c = find("switch:" + sw); c >= 0) {
        out.push_back(c);
        if (direct) direct->push_back(c);
        located = true;
      }
    }
  }
  // The local HCA port.
  const std::string* hca = field("hca");
  const std::string* hca_port = field("hca_port");
  if (hca != nullptr && hca_port != nullptr) {
    if (auto it = hca_port_link_.find(loc.node + "/" + *hca + "/" + *hca_port); it != hca_port_link_.end()) {
      add_local_link(it->second);
      located = true;
    }
  } else if (hca != nullptr) {
    if (auto it = hca_links_.find(loc.node + "/" + *hca); it != hca_links_.end()) {
      for (int c : it->second) add_local_link(c);
      located = true;
    }
  } else if (const std::string* iface = field("iface")) {
    if (auto it = iface_links_.find(loc.node + "/" + *iface); it != iface_links_.end()) {
      for (int c : it->second) add_link(c);
      located = true;
    } else if (auto h = hca_links_.find(loc.node + "/" + *iface); h != hca_links_.end()) {  // "mlx5_5: Port: 1 Link DOWN"
      for (int c : h->second) add_link(c);
      located = true;
    }
  }
  // The peer: its links, and the uplinks between the two leaves when they differ.
  std::string peer_host;
  for (const char* k : {"peer", "peer_gid"}) {
    if (const std::string* v = field(k); v && peer_host.empty()) peer_host = host_of_peer(*v);
  }
  if (const std::string* v = field("peer_lid"); v && peer_host.empty()) peer_host = host_of_peer("lid:" + *v);
  if (!peer_host.empty() && peer_host != loc.node) {
    if (!located) add_host_path(loc.node, out);
    add_host_path(peer_host, out);
    auto a = host_switches_.find(loc.node), b = host_switches_.find(peer_host);
    if (a != host_switches_.end() && b != host_switches_.end() && a->second != b->second) {
      for (const auto* leaves : {&a->second, &b->second})
        for (int leaf : *leaves) {
          const std::string name = components_[leaf].id.substr(7);
          if (auto it = switch_uplinks_.find(name); it != switch_uplinks_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
          if (auto it = switch_far_.find(name); it != switch_far_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
        }
    }
    located = true;
  }
  // NVSwitch / NVLink / Fabric Manager evidence: the host's NVLink domain.
  if (field("nvswitch") || field("nvlink") || field("fm")) {
    if (auto it = host_domain_.find(loc.node); it != host_domain_.end()) {
      out.push_back(it->second);
      if (direct) direct->push_back(it->second);
      located = true;
    }
  }
  if (!located && !loc.node.empty()) {
    // Evidence on a host that names no port we know: every link of the host (and its leaves).
    add_host_path(loc.node, out);
  }
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
  out.erase(std::unique(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()), out.end());
  if (direct) {
    std::sort(direct->begin() + static_cast<std::ptrdiff_t>(direct_start), direct->end());
    direct->erase(std::unique(direct->begin() + static_cast<std::ptrdiff_t>(direct_start), direct->end()), direct->end());
  }
}

}  // namespace attribution::fabric
