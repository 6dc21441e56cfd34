#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test Attribution.
#   scripts/install-deps.sh          build + run (make demo)
#   scripts/install-deps.sh --test   also the test-only services (Slurm, MariaDB, PostgreSQL,
#                                    Prometheus, Chromium, clang-16 for fuzzing, Node packages)
# Idempotent: packages already present are skipped quickly.
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libvectorscan-dev libre2-dev libpcre2-dev libsimdjson-dev nlohmann-json3-dev libyaml-cpp-dev
  libcpp-httplib-dev libcurl4-openssl-dev libcli11-dev libfmt-dev libspdlog-dev libexpected-dev
  libsqlite3-dev sqlite3 libpq-dev libpqxx-dev zlib1g-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-yaml
  libpython3.11-dev pybind11-dev
)
TEST_PACKAGES=(
  ripgrep wrk time clang-16 libclang-rt-16-dev
  slurm-wlm slurmdbd mariadb-server munge
  postgresql-15 haproxy prometheus chromium
  python3-matplotlib python3-jsonschema sqlite3 yamllint jq openssl systemd
  curl file dpkg-dev man-db groff-base
)

want=("${BUILD_PACKAGES[@]}")
if [[ "${1:-}" == "--test" ]]; then
  want+=("${TEST_PACKAGES[@]}")
fi
# Node.js and npm (test tooling only: OpenAPI lint, Playwright): use what the machine has (some
# images ship a Node.js whose npm is bundled and conflicts with Debian's npm package).
if [[ "${1:-}" == "--test" ]] && ! command -v npm >/dev/null; then
  want+=(nodejs npm)
fi
if [[ -n "${ATTRIBUTION_EXTRA_PACKAGES:-}" ]]; then
  read -r -a extra <<<"$ATTRIBUTION_EXTRA_PACKAGES"
  want+=("${extra[@]}")
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  # Services are started by the tests themselves, on loopback, never at install.
  echo exit 101 | $SUDO tee /usr/sbin/policy-rc.d >/dev/null && $SUDO chmod +x /usr/sbin/policy-rc.d
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  $SUDO rm -f /usr/sbin/policy-rc.d
else
  echo "install-deps: all ${#want[@]} packages present"
fi
# The deployment lint checks the Dockerfile's packages with apt-cache: it needs package lists.
if [[ "${1:-}" == "--test" ]] && ! apt-cache show bash >/dev/null 2>&1; then
  echo "install-deps: apt package lists are empty; apt-get update"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
fi
