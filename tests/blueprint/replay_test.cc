// Unit tests of the replay adapter (connectors/replay/): the schedule's arithmetic (steady rate,
// bursts, ids, ordering), the bounded query watch uses, job lookup, config errors that name the
// key, and that a replayed job is attributed from its template's evidence (same verdict but the id).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <set>
#include <thread>
#include <tuple>

#include "attribution/codec.h"
#include "connectors/replay/replay_adapter.h"
#include "run/pipeline.h"

namespace attribution::blueprint {
namespace {

std::string sample(const char* name) { return std::string(ATTRIBUTION_SOURCE_DIR) + "/samples/" + name; }

constexpr int64_t kSec = 1'000'000'000LL;

std::unique_ptr<ReplayAdapter> make(const std::string& yaml, std::string& error) {
  return ReplayAdapter::create(YAML::Load(yaml), error);
}

std::string two_templates() {
  return "bundles: [" + sample("cuinit-999-one-node") + ", " + sample("roce-err12-at-job-start") + "]\n";
}

TimeNs start() { return parse_rfc3339("2026-01-05T00:00:00Z").value; }

TEST(Replay, SteadyRateReleasesEvenlySpacedJobsWithOrderedIds) {
  std::string error;
  auto a = make(two_templates() + "jobs_per_hour: 60\nduration: 1h\n", error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->steady_jobs(), 60);
  EXPECT_EQ(a->total_jobs(), 60);
  EXPECT_EQ(a->last_release(), start() + 3600 * kSec);
  std::vector<WorkloadAttempt> out;
  // [start, start + 10 min]: jobs 1..10 (job k ends at k minutes).
  ASSERT_TRUE(a->ended_between(start(), start() + 600 * kSec, out, error)) << error;
  ASSERT_EQ(out.size(), 10u);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].context.id, fmt::format("replay-{:07}", i + 1));
    EXPECT_EQ(a->reported_end(out[i]), start() + static_cast<int64_t>(i + 1) * 60 * kSec);
  }
  // Templates are cycled, and the evidence window is the template's own.
  EXPECT_EQ(out[0].context.labels.at("replay.template_id"), out[2].context.labels.at("replay.template_id"));
  EXPECT_NE(out[0].context.labels.at("replay.template_id"), out[1].context.labels.at("replay.template_id"));
  EXPECT_NE(out[0].context.end, a->reported_end(out[0]));
  // Both ends of the range are inclusive, and nothing outside it.
  out.clear();
  ASSERT_TRUE(a->ended_between(start() + 60 * kSec, start() + 120 * kSec, out, error));
  ASSERT_EQ(out.size(), 2u);
  out.clear();
  ASSERT_TRUE(a->ended_between(start() + 60 * kSec + 1, start() + 120 * kSec - 1, out, error));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(a->schedule_ended(start() + 3599 * kSec));
  EXPECT_TRUE(a->schedule_ended(start() + 3600 * kSec));
}

TEST(Replay, BurstsMergeWithTheSteadyRateInTimeOrderAndTheLimitCutsTheEarliest) {
  std::string error;
  auto a = make(two_templates() +
                    "jobs_per_hour: 60\nduration: 1h\nbursts:\n  - {at: 30m, jobs: 10000, within: 10m}\n",
                error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->total_jobs(), 10060);
  std::vector<WorkloadAttempt> all;
  ASSERT_TRUE(a->ended_between(start(), start() + 7200 * kSec, all, error));
  ASSERT_EQ(all.size(), 10060u);
  std::set<std::string> ids;
  for (size_t i = 0; i < all.size(); ++i) {
    ids.insert(all[i].context.id);
    if (i > 0) {
      auto prev = std::make_tuple(a->reported_end(all[i - 1]), all[i - 1].context.id);
      auto cur = std::make_tuple(a->reported_end(all[i]), all[i].context.id);
      EXPECT_LT(prev, cur) << i;
    }
  }
  EXPECT_EQ(ids.size(), 10060u);
  EXPECT_TRUE(ids.count("replay-b1-000001"));
  EXPECT_TRUE(ids.count("replay-b1-010000"));
  // The burst: 10,000 jobs in [30m, 40m).
  std::vector<WorkloadAttempt> burst;
  ASSERT_TRUE(a->ended_between(start() + 1800 * kSec, start() + 2400 * kSec - 1, burst, error));
  EXPECT_EQ(burst.size(), 10000u + 10u);  // + steady jobs 30..39
  // The bounded query returns a prefix of the full answer and says more were left.
  std::vector<WorkloadAttempt> first;
  bool more = false;
  ASSERT_TRUE(a->ended_between_limited(start(), start() + 7200 * kSec, 100, first, more, error));
  EXPECT_TRUE(more);
  ASSERT_EQ(first.size(), 100u);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].context.id, all[i].context.id) << i;
  first.clear();
  ASSERT_TRUE(a->ended_between_limited(start(), start() + 7200 * kSec, 20000, first, more, error));
  EXPECT_FALSE(more);
  EXPECT_EQ(first.size(), all.size());
}

TEST(Replay, ByJobFindsScheduledIdsAndRejectsOthers) {
  std::string error;
  auto a = make(two_templates() + "jobs_per_hour: 60\nduration: 1h\nbursts: [{at: 30m, jobs: 10, within: 10m}]\n"
                                  "id_prefix: wk\n",
                error);
  ASSERT_TRUE(a) << error;
  std::vector<WorkloadAttempt> out;
  ASSERT_TRUE(a->by_job("wk-0000042", out, error)) << error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(a->reported_end(out[0]), start() + 42 * 60 * kSec);
  out.clear();
  ASSERT_TRUE(a->by_job("wk-b1-000010", out, error)) << error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(a->reported_end(out[0]), start() + 1800 * kSec + 9 * 60 * kSec);
  for (const char* bad : {"wk-0000061", "wk-42", "wk-b2-000001", "wk-b1-000011", "replay-0000001", "wk-x"}) {
    out.clear();
    EXPECT_FALSE(a->by_job(bad, out, error)) << bad;
    EXPECT_NE(error.find("not in the replay schedule"), std::string::npos) << error;
  }
}

TEST(Replay, ConfigErrorsNameTheKey) {
  std::string error;
  EXPECT_FALSE(make("jobs_per_hour: 5\n", error));
  EXPECT_NE(error.find("adapters.replay.bundles"), std::string::npos) << error;
  EXPECT_FALSE(make(two_templates() + "jobs_per_hour: 5\nspeed: 0\n", error));
  EXPECT_NE(error.find("adapters.replay.speed"), std::string::npos) << error;
  EXPECT_FALSE(make(two_templates() + "bursts: [{at: 1h, jobs: 2.5, within: 10m}]\n", error));
  EXPECT_NE(error.find("adapters.replay.bursts[0].jobs"), std::string::npos) << error;
  EXPECT_FALSE(make(two_templates() + "bursts: [{at: soon, jobs: 5}]\n", error));
  EXPECT_NE(error.find("adapters.replay.bursts[0].at"), std::string::npos) << error;
  EXPECT_FALSE(make(two_templates() + "jobs_per_hour: 5\nrate: 3\n", error));
  EXPECT_NE(error.find("adapters.replay.rate: unknown key"), std::string::npos) << error;
  EXPECT_FALSE(make(two_templates(), error));
  EXPECT_NE(error.find("releases no job"), std::string::npos) << error;
  EXPECT_FALSE(make("bundles: [/nonexistent/bundle]\njobs_per_hour: 5\n", error));
  EXPECT_NE(error.find("adapters.replay.bundles[0]"), std::string::npos) << error;
}

TEST(Replay, TheClockStartsAtStartAndRunsAtSpeed) {
  std::string error;
  auto a = make(two_templates() + "jobs_per_hour: 60\nspeed: 1000000\n", error);
  ASSERT_TRUE(a) << error;
  TimeNs t0 = a->now();
  EXPECT_GE(t0, start());
  EXPECT_LT(t0, start() + 3600 * kSec);  // the first reading is (close to) start, not wall time
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(a->now() - t0, 20'000LL * kSec);  // 20 ms at 10^6 x
}

TEST(Replay, AReplayedJobGetsItsTemplatesVerdictUnderItsOwnId) {
  YAML::Node config = YAML::Load("adapter: replay\nadapters:\n  replay:\n    " + two_templates() +
                                 "    jobs_per_hour: 60\nstores:\n  jsonl:\n    path: /dev/null\n");
  config["rules"] = std::string(ATTRIBUTION_SOURCE_DIR) + "/rules";
  std::vector<std::string> errors;
  auto p = Pipeline::create({config, "test", {}}, false, errors);
  ASSERT_TRUE(p) << (errors.empty() ? "" : errors[0]);
  std::vector<WorkloadAttempt> replayed, original;
  std::string error;
  ASSERT_TRUE(p->adapter().by_job("replay-0000001", replayed, error)) << error;
  ASSERT_EQ(replayed.size(), 1u);
  // The template itself, as `run --bundle` takes it.
  YAML::Node static_config = YAML::Clone(config);
  static_config["adapter"] = "static";
  auto s = Pipeline::create({static_config, "test", {}}, false, errors);
  ASSERT_TRUE(s) << (errors.empty() ? "" : errors[0]);
  ASSERT_TRUE(s->adapter().by_job(sample("cuinit-999-one-node"), original, error)) << error;
  AttemptOutcome r = p->process(replayed[0]);
  AttemptOutcome o = s->process(original[0]);
  EXPECT_TRUE(r.store_errors.empty());
  EXPECT_EQ(r.context.id, "replay-0000001");
  EXPECT_GT(r.lines, 0u);
  EXPECT_EQ(r.lines, o.lines);
  EXPECT_EQ(r.verdict.outcome, o.verdict.outcome);
  EXPECT_EQ(r.verdict.root_node, o.verdict.root_node);
  std::string expected = o.verdict.json;
  for (size_t at = expected.find("\"" + o.context.id + "\""); at != std::string::npos;
       at = expected.find("\"" + o.context.id + "\"", at + 1))
    expected.replace(at + 1, o.context.id.size(), r.context.id);
  EXPECT_EQ(r.verdict.json, expected);
}

}  // namespace
}  // namespace attribution::blueprint
