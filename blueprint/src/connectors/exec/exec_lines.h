// The JSON lines the exec connectors read from a user's command (schema: api/exec-connector.schema.json,
// documented in docs/connectors.md). One JSON object per line; blank lines are skipped.
//
//   adapter   (ExecContextLine)  an execution context (SPEC §3 fields: id, scheduler, cluster,
//             attempt, step, name, user, queue, nodes, ranks, start, end, state, terminal_state,
//             exit_code, reason, labels) plus optional "evidence_files": [{path, kind, node, rank,
//             gpu, utc_offset_s, note}] the run reads as the adapter's own evidence.
//   collector (ExecEvidenceLine) either an observation ("type": "observation" or no type: the
//             service's observation fields, with "text" or "metric") or a block of raw text lines
//             of one source ("type": "text", "source": {name, kind, node, rank, gpu, boot_time,
//             utc_offset_s, note}, "text": "line\nline\n", "first_line": 1).
//
// Unknown fields are errors (a misspelt field would otherwise be lost silently). Errors name the
// field with its path ("end: not an RFC 3339 time", "evidence_files[0].kind: unknown
// observation kind 'log'"); the caller adds the command and the line number.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attribution/model.h"

namespace attribution::blueprint {

struct ExecContextLine {
  ExecutionContext context;
  std::vector<std::pair<std::string, TextSource>> evidence_files;  // path → source defaults
};

struct ExecEvidenceLine {
  bool is_text = false;
  Observation observation;  // when !is_text
  TextSource source;        // when is_text
  std::string text;         // when is_text: whole lines
  uint64_t first_line = 1;  // when is_text
};

// Returns false with `error` (field: message) when the line does not follow the schema.
bool parse_exec_context_line(std::string_view line, ExecContextLine& out, std::string& error);
bool parse_exec_evidence_line(std::string_view line, ExecEvidenceLine& out, std::string& error);

}  // namespace attribution::blueprint
