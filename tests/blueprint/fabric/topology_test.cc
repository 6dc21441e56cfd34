// blueprint/src/fabric/topology: ibnetdiscover + YAML → Topology; bad input → file:line errors.
#include "fabric/topology.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fabric/resolve.h"

namespace attribution::fabric {
namespace {

std::string read(const std::string& name) {
  std::ifstream in(std::string(FABRIC_TEST_DATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string joined(const std::vector<InputError>& errors) {
  std::string s;
  for (const auto& e : errors) s += e.to_string() + "\n";
  return s;
}

Topology small() {
  TopologyBuilder b;
  std::vector<InputError> errors;
  EXPECT_TRUE(b.add_file("small.ibnd", read("small.ibnd"), errors)) << joined(errors);
  EXPECT_TRUE(b.add_file("small.yaml", read("small.yaml"), errors)) << joined(errors);
  Topology t;
  EXPECT_TRUE(b.build(t, errors)) << joined(errors);
  t.valid_from_ns = b.yaml_valid_from();
  return t;
}

TEST(Topology, ReadsIbnetdiscoverSwitchesHostsAndLinks) {
  Topology t = small();
  ASSERT_EQ(t.switches.size(), 3u);
  EXPECT_EQ(t.switches[0].name, "leaf-01");
  EXPECT_EQ(t.switches[0].guid, "0x7cfe900300a10001");
  EXPECT_EQ(t.switches[0].lid, 3);
  EXPECT_EQ(t.switches[0].tier, "leaf");
  EXPECT_EQ(t.switches[2].name, "spine-01");
  EXPECT_EQ(t.switches[2].tier, "spine");
  ASSERT_EQ(t.hosts.size(), 4u);
  EXPECT_EQ(t.hosts[0].host, "gpu-a01");
  ASSERT_EQ(t.hosts[0].ports.size(), 1u);
  EXPECT_EQ(t.hosts[0].ports[0].hca, "mlx5_0");
  EXPECT_EQ(t.hosts[0].ports[0].port, 1);
  EXPECT_EQ(t.hosts[0].ports[0].guid, "0xc42a10300c00011");
  EXPECT_EQ(t.hosts[0].ports[0].lid, 11);
  EXPECT_EQ(t.hosts[0].nvlink_domain, "nvl-a");
  EXPECT_EQ(t.hosts[3].ports[0].iface, "ib0");
  // 4 host links, 2 uplinks, each listed once although ibnetdiscover prints both ends.
  ASSERT_EQ(t.links.size(), 6u);
  EXPECT_EQ(t.links[0].id, "link:gpu-a01/mlx5_0/1~leaf-01/1");
  EXPECT_EQ(t.links[0].kind, "host");
  EXPECT_EQ(t.links[0].width, "4x");
  EXPECT_EQ(t.links[0].speed, "HDR");
  EXPECT_EQ(t.links[4].id, "link:leaf-01/33~spine-01/1");
  EXPECT_EQ(t.links[4].kind, "switch");
  EXPECT_EQ(t.valid_from_ns, 1793491200000000000);  // 2026-11-01T00:00:00Z
}

TEST(Topology, JsonRoundTripAndStableDigest) {
  Topology t = small();
  Topology back;
  std::string error;
  ASSERT_TRUE(Topology::from_json(t.to_json(), back, error)) << error;
  EXPECT_EQ(back.to_json().dump(), t.to_json().dump());
  EXPECT_EQ(small().digest, t.digest);
  EXPECT_EQ(t.digest.rfind("fnv1a64:", 0), 0u);
}

TEST(Topology, PortListedTwiceNamesFileAndLine) {
  std::string text = read("small.ibnd");
  // Repeat leaf-01's port 2 line right after it.
  size_t at = text.find("[2]\t\"H-0c42a10300c00020\"");
  ASSERT_NE(at, std::string::npos);
  size_t eol = text.find('\n', at);
  std::string line = text.substr(at, eol - at + 1);
  text.insert(eol + 1, line);
  int expected_line = 1;
  for (size_t i = 0; i <= eol + 1; ++i)
    if (text[i] == '\n') ++expected_line;
  TopologyBuilder b;
  std::vector<InputError> errors;
  EXPECT_FALSE(b.add_ibnetdiscover("fabric.ibnd", text, errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].file, "fabric.ibnd");
  EXPECT_EQ(errors[0].line, expected_line);
  EXPECT_NE(errors[0].message.find("port 2 of 0x7cfe900300a10001 listed twice (first at line 12)"), std::string::npos)
      << errors[0].to_string();
}

TEST(Topology, TruncatedFileNamesTheDanglingReference) {
  std::string text = read("small.ibnd");
  // Cut the file inside the last CA block: its node line is gone.
  size_t cut = text.rfind("Ca\t1");
  TopologyBuilder b;
  std::vector<InputError> errors;
  EXPECT_FALSE(b.add_ibnetdiscover("cut.ibnd", text.substr(0, cut), errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].file, "cut.ibnd");
  EXPECT_GT(errors[0].line, 0);
  EXPECT_NE(joined(errors).find("truncated?"), std::string::npos) << joined(errors);

  // Cut in the middle of a port line.
  errors.clear();
  size_t mid = text.find("[2]\t\"H-0c42a10300c00040\"");
  std::string partial = text.substr(0, mid + 12);
  TopologyBuilder b2;
  EXPECT_FALSE(b2.add_ibnetdiscover("cut2.ibnd", partial, errors));
  ASSERT_FALSE(errors.empty());
  int last_line = 1;
  for (char c : partial)
    if (c == '\n') ++last_line;
  EXPECT_EQ(errors[0].line, last_line) << joined(errors);
}

TEST(Topology, GarbageIsRejectedWithLine) {
  TopologyBuilder b;
  std::vector<InputError> errors;
  EXPECT_FALSE(b.add_ibnetdiscover("x.ibnd", "switchguid=0x1(1)\nSwitch\t2 \"S-0000000000000001\"\t# \"s\"\nhello world\n", errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].line, 3);
  errors.clear();
  TopologyBuilder e;
  EXPECT_FALSE(e.add_ibnetdiscover("empty.ibnd", "", errors));
  ASSERT_EQ(errors.size(), 1u);
  errors.clear();
  TopologyBuilder p;
  EXPECT_FALSE(p.add_ibnetdiscover("p.ibnd", "[1]\t\"S-0000000000000001\"[1]\n", errors));
  EXPECT_NE(errors.at(0).message.find("outside a node block"), std::string::npos);
}

TEST(Topology, InvalidUtf8IsAnErrorAtItsLine) {
  std::string text = read("small.ibnd");
  size_t at = text.find("\"gpu-a02 mlx5_0\"");
  ASSERT_NE(at, std::string::npos);
  text[at + 3] = static_cast<char>(0xff);
  int line = 1;
  for (size_t i = 0; i < at; ++i)
    if (text[i] == '\n') ++line;
  TopologyBuilder b;
  std::vector<InputError> errors;
  EXPECT_FALSE(b.add_file("bad.ibnd", text, errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, line);
  EXPECT_NE(errors[0].message.find("not valid UTF-8"), std::string::npos);
  errors.clear();
  TopologyBuilder y;
  EXPECT_FALSE(y.add_file("bad.yaml", "version: 1\nhosts:\n  gpu-\xc3: {}\n", errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 3);
}

// Byte sequences shaped like UTF-8 that UTF-8 forbids (overlong forms, surrogates, above U+10FFFF) are errors
// too: the JSON writer refuses them, and a fuzzed switch description with "\xc0\x92" once crashed it.
TEST(Topology, OverlongAndSurrogateUtf8AreErrors) {
  for (const char* bad : {"\xc0\x92", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf0\x80\x80\x80", "\xf4\x90\x80\x80"}) {
    TopologyBuilder y;
    std::vector<InputError> errors;
    EXPECT_FALSE(y.add_file("bad.yaml", std::string("version: 1\nhosts:\n  gpu-") + bad + ": {}\n", errors)) << bad;
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].line, 3);
  }
  TopologyBuilder ok;
  std::vector<InputError> errors;
  EXPECT_TRUE(ok.add_file("ok.yaml", "version: 1\nhosts:\n  gpu-\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80: {}\n", errors));
  EXPECT_TRUE(errors.empty());
}

TEST(Topology, YamlErrorsNameLine) {
  TopologyBuilder b;
  std::vector<InputError> errors;
  EXPECT_FALSE(b.add_yaml("t.yaml", "version: 1\nhosts:\n  gpu-a01: {ips: [10.0.0.1], colour: red}\n", errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].line, 3);
  EXPECT_NE(errors[0].message.find("unknown key 'colour'"), std::string::npos);
  errors.clear();
  TopologyBuilder r;
  EXPECT_TRUE(r.add_yaml("roce.yaml",
                         "version: 1\nroce:\n  links:\n"
                         "    - {switch: leaf-r1, port: 1, host: gpu-c01, hca: mlx5_0, iface: eth2}\n"
                         "    - {switch: leaf-r1, port: 1, host: gpu-c02, hca: mlx5_0}\n",
                         errors))
      << joined(errors);
  Topology t;
  EXPECT_FALSE(r.build(t, errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].line, 5);
  EXPECT_NE(errors[0].message.find("leaf-r1/1 listed twice"), std::string::npos) << joined(errors);
}

TEST(Topology, RoceYamlBuildsLeafSpine) {
  TopologyBuilder b;
  std::vector<InputError> errors;
  ASSERT_TRUE(b.add_yaml("roce.yaml",
                         "version: 1\nroce:\n  links:\n"
                         "    - {switch: leaf-r1, port: 1, host: gpu-c01, hca: mlx5_0, iface: eth2}\n"
                         "    - {switch: leaf-r1, port: 33, peer_switch: spine-r1, peer_port: 1}\n",
                         errors))
      << joined(errors);
  Topology t;
  ASSERT_TRUE(b.build(t, errors)) << joined(errors);
  ASSERT_EQ(t.links.size(), 2u);
  EXPECT_EQ(t.links[0].id, "link:gpu-c01/mlx5_0/1~leaf-r1/1");
  EXPECT_EQ(t.switches[0].tier, "leaf");
  EXPECT_EQ(t.switches[1].tier, "spine");
  TopologyIndex idx(t);
  std::vector<int> out;
  idx.touched({"gpu-c01", {{"iface", "eth2"}}}, out);
  ASSERT_EQ(out.size(), 2u);  // the link and its leaf
  EXPECT_EQ(out[0], idx.find("switch:leaf-r1"));
  EXPECT_EQ(out[1], idx.find("link:gpu-c01/mlx5_0/1~leaf-r1/1"));
}

TEST(Resolve, EvidenceToComponents) {
  TopologyIndex idx(small());
  auto ids = [&](const Location& loc) {
    std::vector<int> out;
    idx.touched(loc, out);
    std::vector<std::string> s;
    for (int c : out) s.push_back(idx.components()[static_cast<size_t>(c)].id);
    std::sort(s.begin(), s.end());
    return s;
  };
  // Local HCA port: the host link and its leaf.
  EXPECT_EQ(ids({"gpu-a01", {{"hca", "mlx5_0"}, {"hca_port", "1"}}}),
            (std::vector<std::string>{"link:gpu-a01/mlx5_0/1~leaf-01/1", "switch:leaf-01"}));
  // A peer under the same leaf: both host links (not the NVLink domain: IB evidence).
  std::vector<int> all, direct;
  idx.touched({"gpu-a01", {{"hca", "mlx5_0"}, {"hca_port", "1"}, {"peer", "10.0.1.2"}}}, all, &direct);
  EXPECT_EQ(all, (std::vector<int>{idx.find("switch:leaf-01"), idx.find("link:gpu-a01/mlx5_0/1~leaf-01/1"),
                                    idx.find("link:gpu-a02/mlx5_0/1~leaf-01/2")}));
  // A completion error towards a peer names neither end: the path broke, the fault may be the peer's.
  EXPECT_TRUE(direct.empty());
  // A local port error names its link, and only its link (the leaf is on it; one port is not the switch).
  direct.clear();
  all.clear();
  idx.touched({"gpu-a01", {{"hca", "mlx5_0"}, {"hca_port", "1"}}}, all, &direct);
  EXPECT_EQ(direct, (std::vector<int>{idx.find("link:gpu-a01/mlx5_0/1~leaf-01/1")}));
  direct.clear();
  all.clear();
  idx.touched({"gpu-a01", {{"hca", "mlx5_0"}, {"peer", "10.0.1.2"}}}, all, &direct);
  EXPECT_TRUE(direct.empty());
  EXPECT_NE(std::find(all.begin(), all.end(), idx.find("link:gpu-a01/mlx5_0/1~leaf-01/1")), all.end());
  // A peer under another leaf (IPv6 with scope, IPv4-mapped GID): the uplinks between them too.
  auto cross = ids({"gpu-a01", {{"peer", "::ffff:10.0.2.1"}}});
  EXPECT_NE(std::find(cross.begin(), cross.end(), "link:leaf-01/33~spine-01/1"), cross.end());
  EXPECT_NE(std::find(cross.begin(), cross.end(), "link:leaf-02/33~spine-01/2"), cross.end());
  EXPECT_NE(std::find(cross.begin(), cross.end(), "link:gpu-b01/mlx5_0/1~leaf-02/1"), cross.end());
  EXPECT_EQ(idx.host_of_peer("fe80::c42:a103:c0:11%ib0"), "gpu-a01");
  // A switch port by GUID.
  EXPECT_EQ(ids({"gpu-b02", {{"switch_guid", "0x7CFE900300B10001"}, {"switch_port", "2"}}}),
            (std::vector<std::string>{"link:leaf-02/33~spine-01/2", "switch:leaf-02", "switch:spine-01"}));
  // NVSwitch evidence: the NVLink domain.
  EXPECT_EQ(ids({"gpu-b01", {{"nvswitch", "0"}, {"nvlink", "30"}}}), (std::vector<std::string>{"nvlink_domain:nvl-b"}));
  // Crossing: a two-leaf run crosses both uplinks and the spine; a one-leaf run does not.
  std::vector<int> crossed;
  idx.crossed({"gpu-a01", "gpu-a02"}, crossed);
  for (int c : crossed) EXPECT_NE(idx.components()[static_cast<size_t>(c)].id, "switch:spine-01");
  idx.crossed({"gpu-a01", "gpu-b01"}, crossed);
  EXPECT_NE(std::find(crossed.begin(), crossed.end(), idx.find("switch:spine-01")), crossed.end());
}

}  // namespace
}  // namespace attribution::fabric
