#!/usr/bin/env bash
# Installs Attribution as a site would and runs it from the installed paths:
#  1. `cmake --install` into a scratch prefix: both binaries, the rules under share/attribution/rules,
#     the systemd units naming that prefix's binaries, /etc-style configuration, man pages; the
#     installed blueprint finds ../share/attribution/rules beside itself (proved with a reduced rule
#     set: the verdict's rules digest is that set's, not the checkout's);
#  2. the Debian package built by CPack (dependencies from dpkg-shlibdeps, conffiles, maintainer
#     scripts), installed on this machine with `apt-get install ./attribution_*.deb`; then:
#     the system user exists, systemd-analyze verify passes on the installed units (binaries and man
#     pages in place), /usr/bin/attribution-service serves /v2/readyz on a loopback port with the
#     installed rules and attributes a sample sent by `attribution-blueprint analyze --service-url`
#     (POSTs to the service), /usr/bin/attribution-blueprint analyze gives the same verdict bytes as
#     the build tree's binary on every sample, and `apt-get purge` removes everything the package installed.
# Runs as root (it installs a package); safe to run twice and against a leftover install (purges
# first), serialised by a lock. Exit 77 (skip, counted as a failure by scripts/run-tests.sh) when not
# root or when cpack/dpkg/apt-get are missing.
# usage: install_package.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC=$(realpath "$1")
BUILD=$(realpath "$2")
SAMPLE="$SRC/samples/cuinit-999-one-node"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || skip "must run as root to install a package"
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps apt-get curl systemd-analyze man; do
  command -v "$tool" >/dev/null || skip "$tool not installed"
done
[[ -x "$BUILD/service/attribution-service" && -x "$BUILD/blueprint/attribution-blueprint" ]] \
  || fail "build the binaries first (ninja -C $BUILD attribution-service attribution-blueprint)"
exec 9> /tmp/attribution-install-package.lock
flock -w 600 9 || fail "another install_package.sh holds /tmp/attribution-install-package.lock"
TMP=$(mktemp -d /tmp/attribution-install-XXXXXX)
SERVICE_PID=""
APT=(apt-get -y -q -o DPkg::Lock::Timeout=300)
purge() {
  local status
  status=$(dpkg-query -W -f='${Status}' attribution 2>/dev/null || true)
  if [[ "$status" == *installed* || "$status" == *config-files* ]]; then
    DEBIAN_FRONTEND=noninteractive "${APT[@]}" purge attribution > "$TMP/purge.log" 2>&1 \
      || { cat "$TMP/purge.log"; return 1; }
  fi
}
cleanup() {
  [[ -n "$SERVICE_PID" ]] && kill "$SERVICE_PID" 2>/dev/null
  wait 2>/dev/null || true
  purge || true
  rm -rf "$TMP"
}
trap cleanup EXIT
# The build tree's verdict: what every installed run must reproduce byte for byte.
(cd "$TMP" && "$BUILD/blueprint/attribution-blueprint" analyze --rules "$SRC/rules" "$SAMPLE" > "$TMP/verdict.build.json")
digest_of() { grep -o '"rules_digest":"[^"]*"' "$1" | head -1; }
BUILD_DIGEST=$(digest_of "$TMP/verdict.build.json")
[[ -n "$BUILD_DIGEST" ]] || fail "the build tree's verdict has no rules_digest"

# ------------------------------------------------------------------ 1. cmake --install
P="$TMP/prefix"
cmake --install "$BUILD" --prefix "$P" > "$TMP/install.log" 2>&1 || { cat "$TMP/install.log"; fail "cmake --install"; }
for f in bin/attribution-service bin/attribution-blueprint share/attribution/rules/gpu.yaml \
         lib/systemd/system/attribution-service.service lib/systemd/system/attribution-blueprint-watch.service \
         lib/systemd/system/attribution-blueprint-run.service lib/systemd/system/attribution-blueprint-run.timer \
         lib/sysusers.d/attribution.conf etc/attribution/service.yaml etc/attribution/blueprint.yaml \
         share/man/man1/attribution-blueprint.1 share/man/man8/attribution-service.8 share/doc/attribution/deploy.md; do
  [[ -e "$P/$f" ]] || fail "cmake --install did not install $f"
done
grep -q "^ExecStart=$P/bin/attribution-service --config $P/etc/attribution/service.yaml" \
  "$P/lib/systemd/system/attribution-service.service" || fail "installed unit does not name the installed binary and configuration"
# Rules found beside the binary: a reduced set (one file left out) must be the one used.
(cd "$SRC/rules" && ls ./*.yaml) > "$TMP/rule-files"
[[ $(wc -l < "$TMP/rule-files") -gt 2 ]] || fail "too few rule files to test the lookup"
L="$TMP/layout"
mkdir -p "$L/bin" "$L/share/attribution"
cp "$P/bin/attribution-blueprint" "$L/bin/"
cp -r "$P/share/attribution/rules" "$L/share/attribution/rules"
rm "$L/share/attribution/rules/progress.yaml"
(cd "$TMP" && env -u ATTRIBUTION_RULES_DIR ATTRIBUTION_CACHE_DIR= "$L/bin/attribution-blueprint" analyze "$SAMPLE" > "$TMP/verdict.layout.json") \
  || fail "the installed blueprint failed with the rules beside it"
LAYOUT_DIGEST=$(digest_of "$TMP/verdict.layout.json")
[[ -n "$LAYOUT_DIGEST" && "$LAYOUT_DIGEST" != "$BUILD_DIGEST" ]] \
  || fail "the installed blueprint did not use <bindir>/../share/attribution/rules ($LAYOUT_DIGEST)"
(cd "$TMP" && env -u ATTRIBUTION_RULES_DIR ATTRIBUTION_CACHE_DIR= "$P/bin/attribution-blueprint" analyze "$SAMPLE" > "$TMP/verdict.prefix.json")
cmp -s "$TMP/verdict.build.json" "$TMP/verdict.prefix.json" || fail "verdict from the cmake --install prefix differs from the build tree's"
echo "ok: cmake --install layout; installed blueprint finds ../share/attribution/rules; verdict identical"

# ------------------------------------------------------------------ 2. the Debian package
purge || fail "could not purge a leftover attribution package"
(cd "$TMP" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg") > "$TMP/cpack.log" 2>&1 \
  || { cat "$TMP/cpack.log"; fail "cpack -G DEB"; }
DEB=$(ls "$TMP"/pkg/attribution_*.deb 2>/dev/null | head -1)
[[ -n "$DEB" ]] || { cat "$TMP/cpack.log"; fail "cpack made no attribution_*.deb"; }
dpkg-deb --field "$DEB" Depends > "$TMP/depends"
for lib in libc6 libstdc++6 libyaml-cpp libfmt libre2 libvectorscan libsqlite3; do
  grep -q "$lib" "$TMP/depends" || fail "Depends lacks $lib (dpkg-shlibdeps): $(cat "$TMP/depends")"
done
dpkg-deb --ctrl-tarfile "$DEB" | tar -t > "$TMP/control-files"
for f in conffiles postinst prerm postrm; do grep -q "$f" "$TMP/control-files" || fail "package has no $f"; done
echo "ok: $(basename "$DEB") ($(du -h "$DEB" | cut -f1)), Depends: $(cat "$TMP/depends")"

DEBIAN_FRONTEND=noninteractive "${APT[@]}" install "$DEB" > "$TMP/apt.log" 2>&1 \
  || { cat "$TMP/apt.log"; fail "apt-get install ./$(basename "$DEB")"; }
[[ $(dpkg-query -W -f='${Status}' attribution) == "install ok installed" ]] || fail "package not installed"
getent passwd attribution > /dev/null || fail "postinst did not create the system user attribution"
for f in /usr/bin/attribution-service /usr/bin/attribution-blueprint /usr/share/attribution/rules/gpu.yaml \
         /etc/attribution/service.yaml /etc/attribution/blueprint.yaml /usr/lib/sysusers.d/attribution.conf; do
  [[ -e "$f" ]] || fail "package did not install $f"
done
man -w attribution-blueprint > /dev/null && man -w 8 attribution-service > /dev/null || fail "man pages not found by man"
systemd-analyze verify /usr/lib/systemd/system/attribution-*.service /usr/lib/systemd/system/attribution-*.timer \
  > "$TMP/verify.log" 2>&1 || true
if grep -qi attribution "$TMP/verify.log"; then cat "$TMP/verify.log"; fail "systemd-analyze verify of the installed units"; fi
echo "ok: package installed (user, files, man pages, units verify)"

# The installed service on a loopback port, its rules found by default.
env -u ATTRIBUTION_RULES_DIR /usr/bin/attribution-service --print-config > "$TMP/installed-config.txt"
grep -q '^rules_dir: "/usr/share/attribution/rules"' "$TMP/installed-config.txt" \
  || fail "/usr/bin/attribution-service does not default to /usr/share/attribution/rules"
mkdir -p "$TMP/state"
(cd "$TMP" && exec env -u ATTRIBUTION_RULES_DIR /usr/bin/attribution-service --listen 127.0.0.1:0 --port-file "$TMP/port" --data-dir "$TMP/state" \
   > "$TMP/service.log" 2>&1) &
SERVICE_PID=$!
for _ in $(seq 1 600); do
  [[ -s "$TMP/port" ]] && break
  kill -0 "$SERVICE_PID" 2>/dev/null || { cat "$TMP/service.log"; fail "/usr/bin/attribution-service exited at start"; }
  sleep 0.1
done
[[ -s "$TMP/port" ]] || fail "/usr/bin/attribution-service did not listen within 60 s"
URL="http://127.0.0.1:$(cat "$TMP/port")"
code=$(curl -s -o "$TMP/readyz.json" -w '%{http_code}' "$URL/v2/readyz")
[[ "$code" == 200 ]] || { cat "$TMP/readyz.json"; fail "/v2/readyz answered $code"; }
grep -q "\"rules_digest\":\"${BUILD_DIGEST#*:\"}" "$TMP/readyz.json" \
  || fail "installed service's rules digest differs from the build tree's: $(cat "$TMP/readyz.json")"
(cd "$TMP" && /usr/bin/attribution-blueprint analyze --service-url "$URL" "$SAMPLE" > "$TMP/verdict.service.json") \
  || fail "analyze --service-url against the installed service"
cmp -s "$TMP/verdict.build.json" "$TMP/verdict.service.json" || fail "verdict through the installed service differs from the build tree's"
curl -sf "$URL/metrics" > "$TMP/metrics.txt" || fail "GET /metrics of the installed service"
grep -Eq '^attribution_http_requests_total\{route="/v2/sessions/\{id\}/attribute",code="200"\} [1-9]' "$TMP/metrics.txt" \
  || fail "the installed service did not count the attribution"
kill "$SERVICE_PID"; wait "$SERVICE_PID" 2>/dev/null || true; SERVICE_PID=""
echo "ok: /usr/bin/attribution-service ready; the sample it attributed has the build tree's verdict bytes ($BUILD_DIGEST)"
# Every sample through /usr/bin/attribution-blueprint with the installed rules (a rule file the
# package left out would show here) against the build tree's binary with the checkout's rules.
samples=0
for bundle in "$SRC"/samples/*/; do
  [[ -f "$bundle/workload.yaml" ]] || continue
  name=$(basename "$bundle")
  (cd "$TMP" && ATTRIBUTION_CACHE_DIR="$TMP/cache" "$BUILD/blueprint/attribution-blueprint" analyze --rules "$SRC/rules" "$bundle" \
     > "$TMP/build.$name.json") || true
  (cd "$TMP" && env -u ATTRIBUTION_RULES_DIR ATTRIBUTION_CACHE_DIR="$TMP/cache" /usr/bin/attribution-blueprint analyze "$bundle" \
     > "$TMP/installed.$name.json") || true
  [[ -s "$TMP/build.$name.json" ]] || fail "the build tree's blueprint gave no verdict for $name"
  cmp -s "$TMP/build.$name.json" "$TMP/installed.$name.json" || fail "sample $name: /usr/bin/attribution-blueprint's verdict differs from the build tree's"
  samples=$((samples + 1))
done
[[ $samples -gt 0 ]] || fail "no samples found under $SRC/samples"
echo "ok: /usr/bin/attribution-blueprint analyze with the installed rules: $samples samples, verdicts identical to the build tree's"

purge || fail "apt-get purge attribution"
for f in /usr/bin/attribution-service /usr/bin/attribution-blueprint /usr/share/attribution /etc/attribution \
         /usr/lib/systemd/system/attribution-service.service; do
  [[ ! -e "$f" ]] || fail "purge left $f"
done
echo "ok: purged"
echo "PASS install_package"
