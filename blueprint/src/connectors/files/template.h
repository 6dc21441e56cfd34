// Templates over an ExecutionContext, shared by the collectors: paths (files), LogQL (loki),
// PromQL (prometheus), selectors (k8s).
//
//   {job} {id}       the workload id            {name} {user} {queue} {cluster} {step} {attempt}
//   {node}           one node (the template is expanded once per node of the context)
//   {rank}           one global rank (expanded once per rank; {node} is then that rank's node)
//   {day}            one UTC day YYYY-MM-DD of [start, end] (expanded once per day)
//   {start} {end}    RFC 3339 (ms); {start_s} {end_s} Unix seconds; {start_ns} {end_ns} nanoseconds;
//   {start:%Y%m%d}   strftime of the UTC time (any format after the colon)
//   {nodes}          the nodes joined with ','; {nodes_regex} the nodes RE2-escaped joined with '|'
//   {namespace}      the context label "namespace";  {label.KEY} any context label
//
// A `{` not followed by a known name and `}` is kept verbatim, so LogQL/PromQL selectors such as
// {host="{node}"} work. Values can be escaped for a double-quoted LogQL/PromQL string.
//
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/model.h"

namespace attribution::blueprint {

enum class TemplateEscape { kNone, kQuotedString };

// One expansion of a template: the per-node / per-rank / per-day variable values.
struct TemplateBinding {
  std::string node;
  int rank = kNoRank;
  std::string day;
};

// Which per-item variables a template uses.
bool template_uses(std::string_view tmpl, std::string_view name);

// The bindings a template expands to: one per node if it uses {node}, one per rank if it uses
// {rank} (node = that rank's node), one per day if it uses {day}; one empty binding otherwise.
// A template that uses {node} over a context without nodes yields no binding.
std::vector<TemplateBinding> template_bindings(std::string_view tmpl, const ExecutionContext& context);

// Expands a template. Unknown names are an error ("unknown template variable {x}") only when
// `strict`; otherwise they are kept verbatim. Returns nullopt with `error` on error.
std::optional<std::string> expand_template(std::string_view tmpl, const ExecutionContext& context,
                                           const TemplateBinding& binding, TemplateEscape escape,
                                           std::string& error, bool strict = false);

// RE2/Go-regexp escaping of a literal.
std::string regex_escape(std::string_view literal);
// Backslash-escapes '\' and '"' (for a double-quoted LogQL/PromQL string).
std::string quote_escape(std::string_view value);

}  // namespace attribution::blueprint
