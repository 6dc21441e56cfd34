// The watch loop's first cursor against a scheduler that reports end times in whole seconds (Slurm's
// sacct). A job that ends after the watcher read its clock, in the same second, carries an end time
// before that reading; the cursor is set on a whole second, so the job is still taken. With the
// cursor at the clock's nanoseconds (before 6e979480) the job fell below the cursor's floor and was
// never attributed: tests/integration/watch.sh saw it once against real Slurm; this test makes the
// same instants happen every time.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "connectors/connector.h"
#include "run/pipeline.h"
#include "run/watch.h"

namespace attribution::blueprint {
namespace {

constexpr TimeNs kSec = 1'000'000'000;
constexpr TimeNs kMs = 1'000'000;
constexpr TimeNs kT0 = 1'760'000'000LL * kSec;  // a whole second

int g_polls = 0;

// Job 4711 ends during the first poll's second, after the watcher read the clock (T0 + 400 ms); the
// scheduler lists it from the second poll on, with its end cut to the second (T0).
class WholeSecondAdapter : public Adapter {
 public:
  std::string name() const override { return "test_whole_second"; }
  bool by_job(const std::string&, std::vector<WorkloadAttempt>&, std::string&) override { return true; }
  bool ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string&) override {
    ++g_polls;
    if (g_polls >= 2 && kT0 >= from && kT0 <= to) {
      WorkloadAttempt a;
      a.context.id = "4711";
      a.context.scheduler = "slurm";
      a.context.state = "FAILED";
      a.context.exit_code = "1:0";
      a.context.start = kT0 - 60 * kSec;
      a.context.end = kT0;
      out.push_back(a);
    }
    return true;
  }
  TimeNs now() const override { return kT0 + (g_polls == 0 ? 400 : 900) * kMs; }
};

AdapterRegistrar whole_second_registrar("test_whole_second",
                                        [](const YAML::Node&, std::string&) -> std::unique_ptr<Adapter> {
                                          return std::make_unique<WholeSecondAdapter>();
                                        });

TEST(Watch, AJobEndingInTheSecondTheCursorWasSetIsTaken) {
  g_polls = 0;
  std::string dir = (std::filesystem::temp_directory_path() / "attribution-watch-test-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  YAML::Node config = YAML::Load("adapter: test_whole_second\nstores:\n  sqlite:\n    path: '" + dir + "/w.sqlite'\n");
  config["rules"] = std::string(ATTRIBUTION_SOURCE_DIR) + "/rules";
  std::vector<std::string> errors;
  auto p = Pipeline::create({config, "test", {}}, false, errors);
  ASSERT_TRUE(p) << (errors.empty() ? "" : errors[0]);

  WatchSettings s;
  s.interval_ns = kMs;
  s.max_polls = 2;
  s.concurrency = 1;
  s.cursor_name = "test";
  std::vector<std::string> ids;
  std::ostringstream err;
  std::atomic<bool> stop{false};
  WatchStats stats;
  run_watch_loop(*p, s, [&](const AttemptOutcome& o) { ids.push_back(o.context.id); }, err, stop, &stats);
  EXPECT_EQ(g_polls, 2) << err.str();
  EXPECT_EQ(ids, std::vector<std::string>{"4711"}) << err.str();
  EXPECT_EQ(stats.attributed, 1u) << err.str();
  // The first cursor was set on the whole second of the first clock reading.
  EXPECT_NE(err.str().find("watch: cursor test set to 2025-10-09T08:53:20"), std::string::npos) << err.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attribution::blueprint
