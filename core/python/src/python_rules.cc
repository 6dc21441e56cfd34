// Python rules → ExternalRule records (read_python_rules), and the refiner / field-hook calls the
// core makes into them. Every entry into Python holds an InterpreterLock (interpreter.h).
#include "attribution/python_rules.h"

#include <fmt/format.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <memory>

#include "interpreter.h"

namespace py = pybind11;

namespace attribution::python {
namespace {

// ------------------------------------------------------------------ the view rules are given

// Shared by a View and every Symptom made from it; cleared when the call returns, after which
// they raise instead of reading freed analysis state.
struct ViewState {
  const AnalysisView* view = nullptr;
  const AnalysisView& get() const {
    if (view == nullptr) throw py::value_error("the analysis view is only valid during the rule call");
    return *view;
  }
};

py::object time_or_none(TimeNs t) { return t == kNoTime ? py::object(py::none()) : py::object(py::int_(t)); }

struct PySymptom {
  std::shared_ptr<ViewState> state;
  SymptomView s;

  py::dict fields() const {
    state->get();
    py::dict d;
    if (s.fields != nullptr) {
      for (const auto& [k, v] : *s.fields) {
        if (!k.empty() && k[0] != '_') d[py::str(k)] = py::str(v);
      }
    }
    return d;
  }
  py::tuple evidence() const {
    state->get();
    py::list out;
    if (s.evidence != nullptr) {
      for (const auto& e : *s.evidence) {
        py::dict d;
        d["time"] = time_or_none(e.t);
        d["kind"] = std::string(to_string(e.kind));
        d["source"] = e.source.str();
        d["line"] = e.line;
        d["node"] = e.node.str();
        d["text"] = e.text;
        d["rule"] = e.rule.str();
        out.append(std::move(d));
      }
    }
    return py::tuple(out);
  }
};

bool id_matches(const std::string& glob, const std::string& id) {
  if (!glob.empty() && glob.back() == '*') return id.compare(0, glob.size() - 1, glob, 0, glob.size() - 1) == 0;
  return glob == id;
}

struct PyView {
  std::shared_ptr<ViewState> state;

  PySymptom symptom(size_t i) const {
    const AnalysisView& v = state->get();
    if (i >= v.size()) throw py::index_error(fmt::format("no symptom {} (the view has {})", i, v.size()));
    return PySymptom{state, v.symptom(i)};
  }
  py::list symptoms(const py::object& id, const py::object& node, const py::object& role, bool include_explained,
                    bool include_filtered) const {
    const AnalysisView& v = state->get();
    std::string id_glob = id.is_none() ? "" : id.cast<std::string>();
    std::string node_s = node.is_none() ? "" : node.cast<std::string>();
    std::string role_s = role.is_none() ? "" : role.cast<std::string>();
    py::list out;
    for (size_t i = 0; i < v.size(); ++i) {
      SymptomView s = v.symptom(i);
      if (!include_filtered && s.filtered) continue;
      if (!include_explained && s.explained_by >= 0) continue;
      if (!id_glob.empty() && !id_matches(id_glob, s.id)) continue;
      if (!node.is_none() && s.node != node_s) continue;
      if (!role.is_none() && s.role != role_s) continue;
      out.append(py::cast(PySymptom{state, std::move(s)}));
    }
    return out;
  }
  py::list timeline(bool include_explained) const {
    const AnalysisView& v = state->get();
    py::list out;
    for (size_t i : v.timeline()) {
      SymptomView s = v.symptom(i);
      if (s.filtered || (!include_explained && s.explained_by >= 0)) continue;
      out.append(py::cast(PySymptom{state, std::move(s)}));
    }
    return out;
  }
  py::dict context() const {
    const ExecutionContext& c = state->get().context();
    py::dict d;
    d["id"] = c.id;
    d["scheduler"] = c.scheduler;
    d["cluster"] = c.cluster;
    d["attempt"] = c.attempt;
    d["step"] = c.step;
    d["name"] = c.name;
    d["user"] = c.user;
    d["queue"] = c.queue;
    d["nodes"] = py::tuple(py::cast(c.nodes));
    py::dict ranks;
    for (const auto& [r, n] : c.ranks) ranks[py::int_(r)] = py::str(n);
    d["ranks"] = ranks;
    d["start"] = time_or_none(c.start);
    d["end"] = time_or_none(c.end);
    d["state"] = c.state;
    d["terminal_state"] = c.terminal_state.empty() ? normalize_terminal_state(c.state) : c.terminal_state;
    d["exit_code"] = c.exit_code;
    d["reason"] = c.reason;
    d["labels"] = py::cast(c.labels);
    return d;
  }
  py::list coverage() const {
    py::list out;
    for (const auto& c : state->get().coverage()) {
      py::dict d;
      d["kind"] = c.kind;
      d["node"] = c.node;
      d["lines"] = c.lines;
      out.append(std::move(d));
    }
    return out;
  }
  bool has_source(const std::string& kind, const py::object& node) const {
    std::string node_s = node.is_none() ? "" : node.cast<std::string>();
    for (const auto& c : state->get().coverage()) {
      if (c.kind != kind || c.lines == 0) continue;
      if (node.is_none() || c.node == node_s || c.node.empty()) return true;
    }
    return false;
  }
  py::list connector_reports() const {
    py::list out;
    for (const auto& r : state->get().connector_reports()) {
      py::dict d;
      d["connector"] = r.connector;
      d["status"] = r.status;
      d["reason"] = r.reason;
      d["observations"] = r.observations;
      out.append(std::move(d));
    }
    return out;
  }
};

}  // namespace
}  // namespace attribution::python

PYBIND11_EMBEDDED_MODULE(_attribution_native, m) {
  using namespace attribution::python;
  m.attr("BudgetExceeded") = py::reinterpret_borrow<py::object>(budget_exceeded_type());
  py::class_<PySymptom>(m, "Symptom", "One symptom of the analysis (read-only).")
      .def_property_readonly("index", [](const PySymptom& p) { return p.s.index; })
      .def_property_readonly("id", [](const PySymptom& p) { return p.s.id; })
      .def_property_readonly("node", [](const PySymptom& p) { return p.s.node; })
      .def_property_readonly("gpu", [](const PySymptom& p) { return p.s.gpu; })
      .def_property_readonly("rank", [](const PySymptom& p) {
        return p.s.rank == attribution::kNoRank ? py::object(py::none()) : py::object(py::int_(p.s.rank));
      })
      .def_property_readonly("label", [](const PySymptom& p) { return p.s.label; })
      .def_property_readonly("role", [](const PySymptom& p) { return p.s.role; })
      .def_property_readonly("domain", [](const PySymptom& p) { return p.s.domain; })
      .def_property_readonly("outcome", [](const PySymptom& p) { return p.s.outcome; })
      .def_property_readonly("priority", [](const PySymptom& p) { return p.s.priority; })
      .def_property_readonly("indirect", [](const PySymptom& p) { return p.s.indirect; })
      .def_property_readonly("synthetic", [](const PySymptom& p) { return p.s.synthetic; })
      .def_property_readonly("active", [](const PySymptom& p) { return p.s.active(); })
      .def_property_readonly("explained_by", [](const PySymptom& p) {
        return p.s.explained_by < 0 ? py::object(py::none()) : py::object(py::int_(p.s.explained_by));
      })
      .def_property_readonly("explained_rule", [](const PySymptom& p) { return p.s.explained_rule; })
      .def_property_readonly("first_seen", [](const PySymptom& p) { return time_or_none(p.s.first_seen); })
      .def_property_readonly("last_seen", [](const PySymptom& p) { return time_or_none(p.s.last_seen); })
      .def_property_readonly("count", [](const PySymptom& p) { return p.s.count; })
      .def_property_readonly("fields", &PySymptom::fields)
      .def_property_readonly("evidence", &PySymptom::evidence)
      .def("__repr__", [](const PySymptom& p) {
        return fmt::format("<Symptom {} {} node={} rank={} gpu={} count={}>", p.s.index, p.s.id, p.s.node,
                           p.s.rank, p.s.gpu, p.s.count);
      });
  py::class_<PyView>(m, "View", "The read-only analysis view a refiner is called with.")
      .def_property_readonly("phase", [](const PyView& v) { return std::string(v.state->get().phase()); })
      .def_property_readonly("context", &PyView::context)
      .def("__len__", [](const PyView& v) { return v.state->get().size(); })
      .def("symptom", &PyView::symptom, py::arg("index"))
      .def("symptoms", &PyView::symptoms, py::arg("id") = py::none(), py::arg("node") = py::none(),
           py::arg("role") = py::none(), py::arg("include_explained") = false, py::arg("include_filtered") = false)
      .def("timeline", &PyView::timeline, py::arg("include_explained") = true)
      .def("coverage", &PyView::coverage)
      .def("has_source", &PyView::has_source, py::arg("kind"), py::arg("node") = py::none())
      .def_property_readonly("connector_reports", &PyView::connector_reports)
      .def_property_readonly("outcome", [](const PyView& v) { return std::string(v.state->get().outcome()); })
      .def_property_readonly("quality", [](const PyView& v) { return std::string(v.state->get().quality()); })
      .def_property_readonly("root", [](const PyView& v) -> py::object {
        int r = v.state->get().root();
        return r < 0 ? py::object(py::none()) : py::cast(v.symptom(static_cast<size_t>(r)));
      });
}

namespace attribution::python {
namespace {

// ------------------------------------------------------------------ errors from Python

// The pending Python exception as a RuleFailure, cleared. `file` is the rule's file: the line is
// that of the innermost traceback frame in it, else `fallback_line`.
RuleFailure take_failure(const std::string& file, int fallback_line, const BudgetScope* scope) {
  RuleFailure f;
  f.file = file;
  f.line = fallback_line;
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != nullptr && value != nullptr) PyException_SetTraceback(value, tb);
  for (auto* t = reinterpret_cast<PyTracebackObject*>(tb); t != nullptr; t = t->tb_next) {
    PyCodeObject* code = PyFrame_GetCode(t->tb_frame);
    const char* name = code != nullptr ? PyUnicode_AsUTF8(code->co_filename) : nullptr;
    if (name != nullptr && file == name) f.line = t->tb_lineno;
    Py_XDECREF(code);
  }
  // A SyntaxError names its own line.
  if (type != nullptr && PyErr_GivenExceptionMatches(type, PyExc_SyntaxError) && value != nullptr) {
    PyObject* lineno = PyObject_GetAttrString(value, "lineno");
    if (lineno != nullptr && PyLong_Check(lineno)) f.line = static_cast<int>(PyLong_AsLong(lineno));
    Py_XDECREF(lineno);
  }
  std::string type_name = "Exception";
  if (type != nullptr) {
    PyObject* n = PyObject_GetAttrString(type, "__name__");
    if (n != nullptr && PyUnicode_Check(n)) type_name = PyUnicode_AsUTF8(n);
    Py_XDECREF(n);
  }
  std::string text;
  if (value != nullptr) {
    PyObject* s = PyObject_Str(value);
    if (s != nullptr) {
      const char* c = PyUnicode_AsUTF8(s);
      if (c != nullptr) text = c;
      Py_DECREF(s);
    }
  }
  PyErr_Clear();
  bool budget = type != nullptr && PyErr_GivenExceptionMatches(type, budget_exceeded_type());
  if (scope != nullptr && scope->memory_exceeded() && (budget || PyErr_GivenExceptionMatches(type, PyExc_MemoryError))) {
    f.status = "memory";
    f.message = "memory budget exceeded (MemoryError)";
  } else if (budget || (scope != nullptr && scope->time_exceeded())) {
    f.status = "timeout";
    if (scope != nullptr && scope->time_exceeded_file() == file) f.line = scope->time_exceeded_line();
    f.message = text.empty() ? "time budget exceeded" : text;
  } else {
    f.status = "error";
    f.message = text.empty() ? type_name : type_name + ": " + text;
  }
  if (f.message.size() > 500) f.message = f.message.substr(0, 497) + "...";
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return f;
}

RuleFailure interpreter_failure(const std::string& file, int line) {
  return {"error", "Python is not available: " + InterpreterLock::error(), file, line};
}

// A strong reference to a Python object, released under the interpreter lock (rule sets die on
// any thread).
class PyRef {
 public:
  explicit PyRef(PyObject* o) : o_(o) {}  // steals
  ~PyRef() {
    if (o_ == nullptr || !Py_IsInitialized()) return;
    InterpreterLock lock;
    if (lock.ok()) Py_DECREF(o_);
  }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  PyObject* get() const { return o_; }

 private:
  PyObject* o_;
};

// ------------------------------------------------------------------ actions a refiner returns

struct ActionTypes {
  py::object explain, candidate, cap;
};

ActionTypes action_types() {
  py::module_ m = py::module_::import("attribution");
  return {m.attr("Explain"), m.attr("Candidate"), m.attr("CapQuality")};
}

size_t item_index(const py::handle& h, size_t size) {
  size_t i = 0;
  if (py::isinstance<PySymptom>(h)) {
    i = h.cast<const PySymptom&>().s.index;
  } else if (py::isinstance<py::int_>(h)) {
    long long v = h.cast<long long>();
    if (v < 0) throw std::runtime_error(fmt::format("symptom index {} is negative", v));
    i = static_cast<size_t>(v);
  } else {
    throw std::runtime_error("a symptom is given as a Symptom or its index, not " +
                             py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>());
  }
  if (i >= size) throw std::runtime_error(fmt::format("no symptom {} (the view has {})", i, size));
  return i;
}

std::vector<size_t> item_indices(const py::handle& seq, size_t size) {
  std::vector<size_t> out;
  for (const auto& h : seq) out.push_back(item_index(h, size));
  return out;
}

std::string str_attr(const py::handle& o, const char* name) {
  py::object v = o.attr(name);
  if (v.is_none()) return "";
  if (!py::isinstance<py::str>(v)) throw std::runtime_error(fmt::format("'{}' must be a string", name));
  return v.cast<std::string>();
}

void convert_action(const py::handle& a, const ActionTypes& types, size_t size, RefinerActions& out) {
  if (py::isinstance(a, types.explain)) {
    size_t cause = item_index(a.attr("cause"), size);
    for (size_t effect : item_indices(a.attr("effects"), size)) out.explanations.emplace_back(cause, effect);
  } else if (py::isinstance(a, types.candidate)) {
    NewSymptom s;
    s.id = str_attr(a, "id");
    s.label = str_attr(a, "label");
    s.domain = str_attr(a, "domain");
    s.outcome = str_attr(a, "outcome");
    s.role = str_attr(a, "role");
    s.node = str_attr(a, "node");
    s.gpu = str_attr(a, "gpu");
    py::object rank = a.attr("rank");
    s.rank = rank.is_none() ? kNoRank : rank.cast<int>();
    s.priority = a.attr("priority").cast<int>();
    s.indirect = a.attr("indirect").cast<bool>();
    s.based_on = item_indices(a.attr("based_on"), size);
    s.explains = item_indices(a.attr("explains"), size);
    for (const auto& [k, v] : a.attr("fields").cast<py::dict>()) {
      std::string key = py::str(k).cast<std::string>();
      if (key.empty() || key[0] == '_') throw std::runtime_error(fmt::format("field name '{}' is reserved", key));
      s.fields[key] = py::str(v).cast<std::string>();
    }
    if (s.id.empty()) throw std::runtime_error("a Candidate/Evidence needs an id");
    out.symptoms.push_back(std::move(s));
  } else if (py::isinstance(a, types.cap)) {
    RefinerActions::QualityCap cap{str_attr(a, "level"), str_attr(a, "reason")};
    static const std::vector<std::string> kOrder = {"definitive", "probable", "ambiguous", "insufficient"};
    auto rank_of = [&](const std::string& l) { return std::find(kOrder.begin(), kOrder.end(), l) - kOrder.begin(); };
    if (!out.quality_cap || rank_of(cap.level) > rank_of(out.quality_cap->level)) out.quality_cap = cap;
  } else {
    throw std::runtime_error("a refiner returns None, Explain, Candidate, Evidence, CapQuality or a list of them, not " +
                             py::str(py::type::handle_of(a).attr("__name__")).cast<std::string>());
  }
}

// ------------------------------------------------------------------ the rules

class PythonRefiner final : public ExternalRefiner {
 public:
  PythonRefiner(PyObject* func, std::string file, int line, PythonBudget budget)
      : func_(func), file_(std::move(file)), line_(line), budget_(budget) {}

  bool run(const AnalysisView& view, RefinerActions& actions, RuleFailure& failure) const override {
    InterpreterLock lock;
    if (!lock.ok()) {
      failure = interpreter_failure(file_, line_);
      return false;
    }
    auto state = std::make_shared<ViewState>();
    state->view = &view;
    struct Invalidate {
      std::shared_ptr<ViewState>& s;
      ~Invalidate() { s->view = nullptr; }
    } invalidate{state};
    PyObject* result = nullptr;
    {
      py::object arg = py::cast(PyView{state});
      BudgetScope scope({budget_.steps, budget_.memory_bytes});
      result = PyObject_CallOneArg(func_.get(), arg.ptr());
      if (result == nullptr) {
        failure = take_failure(file_, line_, &scope);
        return false;
      }
    }
    py::object r = py::reinterpret_steal<py::object>(result);
    try {
      ActionTypes types = action_types();
      if (r.is_none()) return true;
      if (py::isinstance<py::list>(r) || py::isinstance<py::tuple>(r)) {
        for (const auto& a : r) convert_action(a, types, view.size(), actions);
      } else {
        convert_action(r, types, view.size(), actions);
      }
    } catch (const std::exception& e) {
      PyErr_Clear();
      actions = {};
      failure = {"invalid", fmt::format("invalid return value: {}", e.what()), file_, line_};
      return false;
    }
    return true;
  }

 private:
  PyRef func_;
  std::string file_;
  int line_;
  PythonBudget budget_;
};

class PythonFieldHook final : public FieldHook {
 public:
  PythonFieldHook(PyObject* func, std::string file, int line, PythonBudget budget)
      : func_(func), file_(std::move(file)), line_(line), budget_(budget) {}

  bool run(const std::string&, const std::map<std::string, std::string>& fields, std::string_view line,
           std::map<std::string, std::string>& extra, RuleFailure& failure) const override {
    InterpreterLock lock;
    if (!lock.ok()) {
      failure = interpreter_failure(file_, line_);
      return false;
    }
    PyObject* result = nullptr;
    {
      py::dict f;
      for (const auto& [k, v] : fields) {
        if (!k.empty() && k[0] != '_') f[py::str(k)] = py::str(v);
      }
      py::str text(line.data(), line.size());
      BudgetScope scope({budget_.steps, budget_.memory_bytes});
      result = PyObject_CallFunctionObjArgs(func_.get(), f.ptr(), text.ptr(), nullptr);
      if (result == nullptr) {
        failure = take_failure(file_, line_, &scope);
        return false;
      }
    }
    py::object r = py::reinterpret_steal<py::object>(result);
    try {
      if (r.is_none()) return true;
      if (!py::isinstance<py::dict>(r)) throw std::runtime_error("a field hook returns a dict of fields or None");
      for (const auto& [k, v] : r.cast<py::dict>()) {
        if (!py::isinstance<py::str>(k)) throw std::runtime_error("field names are strings");
        std::string key = k.cast<std::string>();
        if (key.empty() || key[0] == '_') throw std::runtime_error(fmt::format("field name '{}' is reserved", key));
        extra[key] = py::isinstance<py::str>(v) ? v.cast<std::string>() : py::str(v).cast<std::string>();
      }
    } catch (const std::exception& e) {
      PyErr_Clear();
      extra.clear();
      failure = {"invalid", fmt::format("invalid return value: {}", e.what()), file_, line_};
      return false;
    }
    return true;
  }

 private:
  PyRef func_;
  std::string file_;
  int line_;
  PythonBudget budget_;
};

// ------------------------------------------------------------------ reading

std::string dir_of(const std::string& name) {
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? "" : name.substr(0, slash);
}
std::string base_of(const std::string& name) {
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

py::object yaml_to_python(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: {
      py::list l;
      for (const auto& e : n) l.append(yaml_to_python(e));
      return l;
    }
    case YAML::NodeType::Map: {
      py::dict d;
      for (const auto& kv : n) d[yaml_to_python(kv.first)] = yaml_to_python(kv.second);
      return d;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return py::str(s);  // quoted: a string
      if (s == "true" || s == "True") return py::bool_(true);
      if (s == "false" || s == "False") return py::bool_(false);
      if (s == "null" || s == "~") return py::none();
      long long i = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) return py::int_(i);
      return py::str(s);
    }
    default:
      return py::none();
  }
}

// The data files of `dir`, by base name → ("csv" | "json" | "yaml", text or parsed value).
py::dict site_data_of(const std::vector<RuleText>& files, const std::string& dir, RuleRecords& records) {
  py::dict data;
  for (const auto& f : files) {
    if (!is_rule_data_file(f.name) || dir_of(f.name) != dir) continue;
    std::string base = base_of(f.name);
    if (ends_with(f.name, ".csv")) {
      data[py::str(base)] = py::make_tuple("csv", f.text);
    } else if (ends_with(f.name, ".json")) {
      data[py::str(base)] = py::make_tuple("json", f.text);
    } else {
      try {
        data[py::str(base)] = py::make_tuple("yaml", yaml_to_python(YAML::Load(f.text)));
      } catch (const YAML::Exception& e) {
        add_load_error(records, {f.name, e.mark.line + 1, e.mark.column + 1, e.msg});
      }
    }
  }
  return data;
}

std::vector<std::string> string_list(const py::handle& h, const char* what) {
  std::vector<std::string> out;
  if (py::isinstance<py::str>(h)) throw std::runtime_error(fmt::format("'{}' is a list of strings", what));
  for (const auto& e : h) out.push_back(py::str(e).cast<std::string>());
  return out;
}

ExternalFixture convert_fixture(const py::handle& h, int line, bool refiner) {
  ExternalFixture fx;
  fx.line = line;
  py::dict d = h.cast<py::dict>();
  for (const auto& [k, v] : d) {
    std::string key = py::str(k).cast<std::string>();
    if (key == "expect") {
      if (py::isinstance<py::str>(v) && v.cast<std::string>() == "none") {
        fx.expect["none"] = "true";
        continue;
      }
      for (const auto& [ek, ev] : v.cast<py::dict>()) {
        std::string value = py::isinstance<py::list>(ev) || py::isinstance<py::tuple>(ev)
                                ? fmt::format("{}", fmt::join(string_list(ev, "expect"), ","))
                                : py::str(ev).cast<std::string>();
        fx.expect[py::str(ek).cast<std::string>()] = value;
      }
    } else if (key == "line" && !refiner) {
      fx.input_line = py::str(v).cast<std::string>();
    } else if (key == "lines" && refiner) {
      fx.lines = string_list(v, "lines");
    } else if (key == "nodes" && refiner) {
      fx.nodes = string_list(v, "nodes");
    } else {
      throw std::runtime_error(fmt::format("unknown fixture key '{}' (a {} fixture has {})", key,
                                           refiner ? "refiner" : "field hook",
                                           refiner ? "lines, nodes, expect" : "line, expect"));
    }
  }
  if (!refiner && fx.input_line.empty()) throw std::runtime_error("a field hook fixture needs 'line'");
  if (refiner && fx.lines.empty()) throw std::runtime_error("a refiner fixture needs 'lines'");
  return fx;
}

void read_one(const RuleText& file, const std::vector<RuleText>& all, RuleRecords& records, const PythonBudget& budget) {
  auto error = [&](int line, int column, std::string msg) {
    add_load_error(records, {file.name, line, column, std::move(msg)});
  };
  try {
    py::module_ attribution = py::module_::import("attribution");
    // 1. What a rule may not do, found in its source (with line and column).
    py::object problems;
    try {
      problems = attribution.attr("_check_source")(file.text, file.name);
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_SyntaxError)) {
        py::object v = e.value();
        int line = v.attr("lineno").is_none() ? 0 : v.attr("lineno").cast<int>();
        int col = v.attr("offset").is_none() ? 0 : v.attr("offset").cast<int>();
        error(line, col, "SyntaxError: " + py::str(v.attr("msg")).cast<std::string>());
        return;
      }
      throw;
    }
    bool clean = true;
    for (const auto& p : problems) {
      py::tuple t = p.cast<py::tuple>();
      error(t[0].cast<int>(), t[1].cast<int>(), t[2].cast<std::string>());
      clean = false;
    }
    if (!clean) return;
    // 2. Run the module once, within the budget, in a restricted namespace.
    py::object code = py::module_::import("builtins").attr("compile")(file.text, file.name, "exec", 0, true);
    py::dict ns = attribution.attr("_begin")(file.name, site_data_of(all, dir_of(file.name), records));
    PyObject* ran = nullptr;
    RuleFailure failure;
    {
      BudgetScope scope({budget.steps, budget.memory_bytes});
      ran = PyEval_EvalCode(code.ptr(), ns.ptr(), ns.ptr());
      if (ran == nullptr) failure = take_failure(file.name, 1, &scope);
    }
    py::list registered = attribution.attr("_end")(ran == nullptr ? py::object(py::none()) : py::object(ns));
    if (ran == nullptr) {
      error(failure.line, 0, fmt::format("the rule file failed when loaded: {}", failure.message));
      return;
    }
    Py_DECREF(ran);
    if (registered.empty()) {
      add_load_warning(records, {file.name, 1, 1, "the file registers no rule (use @attribution.refiner or "
                                                  "@attribution.field_hook)"});
    }
    // 3. One record per registered function.
    for (const auto& entry : registered) {
      py::dict e = entry.cast<py::dict>();
      ExternalRule rule;
      rule.language = "python";
      rule.id = e["id"].cast<std::string>();
      rule.description = e["description"].cast<std::string>();
      int line = e["line"].cast<int>();
      rule.where = {file.name, line, 1};
      bool is_refiner = e["kind"].cast<std::string>() == "refiner";
      try {
        for (const auto& f : e["fixtures"]) rule.fixtures.push_back(convert_fixture(f, line, is_refiner));
      } catch (const std::exception& ex) {
        PyErr_Clear();
        error(line, 1, fmt::format("rule '{}': fixture: {}", rule.id, ex.what()));
        continue;
      }
      PyObject* func = e["func"].ptr();
      Py_INCREF(func);
      if (is_refiner) {
        rule.kind = ExternalRule::Kind::kRefiner;
        rule.phase = e["phase"].cast<std::string>();
        rule.refiner = std::make_shared<PythonRefiner>(func, file.name, line, budget);
      } else {
        rule.kind = ExternalRule::Kind::kFieldHook;
        rule.extractor = e["extractor"].cast<std::string>();
        rule.hook = std::make_shared<PythonFieldHook>(func, file.name, line, budget);
      }
      add_external_rule(records, std::move(rule));
    }
  } catch (py::error_already_set& e) {
    // Our own module failed on this file (a RuleError from a decorator lands in step 2).
    std::string what = e.what();
    e.restore();
    PyErr_Clear();
    error(1, 0, what);
  } catch (const std::exception& e) {
    PyErr_Clear();
    error(1, 0, e.what());
  }
}

}  // namespace

bool is_python_rule_file(std::string_view name) { return ends_with(name, ".py"); }

void read_python_rules(const std::vector<RuleText>& files, RuleRecords& records, const PythonBudget& budget) {
  bool any = std::any_of(files.begin(), files.end(), [](const RuleText& f) { return is_python_rule_file(f.name); });
  if (!any) return;
  InterpreterLock lock;
  if (!lock.ok()) {
    for (const auto& f : files) {
      if (is_python_rule_file(f.name)) add_load_error(records, {f.name, 0, 0, "Python is not available: " + InterpreterLock::error()});
    }
    return;
  }
  for (const auto& f : files) {
    if (is_python_rule_file(f.name)) read_one(f, files, records, budget);
  }
}

LoadResult load_rules(const std::vector<RuleText>& files, std::string_view compiled_cache, const PythonBudget& budget) {
  RuleRecords records;
  for (const auto& f : files) {
    if (is_python_rule_file(f.name) || is_rule_data_file(f.name)) {
      add_rule_source(records, f);
    } else {
      read_rules(f, records);
    }
  }
  read_python_rules(files, records, budget);
  collect_rules(records);
  return compile_rules(std::move(records), compiled_cache);
}

std::string interpreter_version() {
  InterpreterLock lock;
  if (!lock.ok()) return InterpreterLock::error();
  return Py_GetVersion();
}

}  // namespace attribution::python
