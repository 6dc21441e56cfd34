// fake-loki: the loopback Loki stand-in of fake_loki.h as a server process, for
// tests/integration/loki.sh.
//   fake-loki --data streams.jsonl [--port N] [--port-file F] [--tenant T]
//             [--max-entries-limit N] [--fail-first N --fail-status 503]
// Prints the port on stdout (and to --port-file), serves until SIGTERM/SIGINT.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "fake_loki.h"

namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  attribution::testing::FakeLokiOptions opt;
  std::string data, port_file;
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--data") data = v;
    else if (k == "--port") port = std::stoi(v);
    else if (k == "--port-file") port_file = v;
    else if (k == "--tenant") opt.tenant = v;
    else if (k == "--max-entries-limit") opt.max_entries_limit = std::stoi(v);
    else if (k == "--fail-first") opt.fail_first = std::stoi(v);
    else if (k == "--fail-status") opt.fail_status = std::stoi(v);
    else {
      std::cerr << "fake-loki: unknown option " << k << "\n";
      return 2;
    }
  }
  attribution::testing::FakeLoki loki(opt);
  std::string error;
  if (!data.empty() && !loki.load_jsonl(data, error)) {
    std::cerr << "fake-loki: " << error << "\n";
    return 1;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  int p = loki.start(port);
  if (p < 0) {
    std::cerr << "fake-loki: cannot listen\n";
    return 1;
  }
  std::cout << p << std::endl;
  if (!port_file.empty()) std::ofstream(port_file) << p << "\n";
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  loki.stop();
  std::cerr << "fake-loki: " << loki.requests() << " requests, " << loki.bytes_sent() << " bytes sent\n";
  return 0;
}
