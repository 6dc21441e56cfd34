#include "interpreter.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "attribution_module.h"

namespace attribution::python {
namespace {

// ------------------------------------------------------------------ memory budget
// Every block of the MEM and OBJ domains carries its size in a 16-byte header (16 keeps
// pymalloc's alignment), so frees can be counted. Installed before the interpreter starts, so no
// block is ever freed that was allocated without the header.
constexpr size_t kHeader = 16;
PyMemAllocatorEx g_inner_mem{}, g_inner_obj{};
int64_t g_net_bytes = 0;          // net bytes allocated, process-wide (under the GIL)
bool g_memory_budget_on = false;  // set by BudgetScope
int64_t g_memory_limit = 0;       // bytes a call may add over g_memory_base
int64_t g_memory_base = 0;
bool g_memory_tripped = false;

bool over_budget(size_t more) {
  if (!g_memory_budget_on) return false;
  if (g_net_bytes + static_cast<int64_t>(more) - g_memory_base <= g_memory_limit) return false;
  g_memory_tripped = true;
  return true;
}

void* counted_malloc(void* ctx, size_t n) {
  auto* inner = static_cast<PyMemAllocatorEx*>(ctx);
  if (n > PY_SSIZE_T_MAX - kHeader || over_budget(n)) return nullptr;
  auto* p = static_cast<char*>(inner->malloc(inner->ctx, n + kHeader));
  if (p == nullptr) return nullptr;
  std::memcpy(p, &n, sizeof n);
  g_net_bytes += static_cast<int64_t>(n);
  return p + kHeader;
}

void* counted_calloc(void* ctx, size_t count, size_t size) {
  if (size != 0 && count > (PY_SSIZE_T_MAX - kHeader) / size) return nullptr;
  size_t n = count * size;
  void* p = counted_malloc(ctx, n);
  if (p != nullptr) std::memset(p, 0, n);
  return p;
}

void counted_free(void* ctx, void* ptr) {
  if (ptr == nullptr) return;
  auto* inner = static_cast<PyMemAllocatorEx*>(ctx);
  char* block = static_cast<char*>(ptr) - kHeader;
  size_t n = 0;
  std::memcpy(&n, block, sizeof n);
  g_net_bytes -= static_cast<int64_t>(n);
  inner->free(inner->ctx, block);
}

void* counted_realloc(void* ctx, void* ptr, size_t n) {
  if (ptr == nullptr) return counted_malloc(ctx, n);
  auto* inner = static_cast<PyMemAllocatorEx*>(ctx);
  char* block = static_cast<char*>(ptr) - kHeader;
  size_t old = 0;
  std::memcpy(&old, block, sizeof old);
  if (n > PY_SSIZE_T_MAX - kHeader || (n > old && over_budget(n - old))) return nullptr;
  auto* p = static_cast<char*>(inner->realloc(inner->ctx, block, n + kHeader));
  if (p == nullptr) return nullptr;
  std::memcpy(p, &n, sizeof n);
  g_net_bytes += static_cast<int64_t>(n) - static_cast<int64_t>(old);
  return p + kHeader;
}

// ------------------------------------------------------------------ time budget
uint64_t g_events = 0;
uint64_t g_event_limit = 0;
bool g_time_tripped = false;
PyObject* g_budget_exceeded = nullptr;

std::string g_trip_file;
int g_trip_line = 0;

int count_trace_event(PyObject*, PyFrameObject* frame, int, PyObject*) {
  if (++g_events <= g_event_limit) return 0;
  if (!g_time_tripped && frame != nullptr) {  // where the budget ran out: the first step over it
    PyCodeObject* code = PyFrame_GetCode(frame);
    const char* name = code != nullptr ? PyUnicode_AsUTF8(code->co_filename) : nullptr;
    g_trip_file = name != nullptr ? name : "";
    g_trip_line = PyFrame_GetLineNumber(frame);
    Py_XDECREF(code);
  }
  g_time_tripped = true;
  PyErr_Format(g_budget_exceeded, "time budget exceeded (%llu Python steps)",
               static_cast<unsigned long long>(g_event_limit));
  return -1;
}

// ------------------------------------------------------------------ start
std::mutex g_mutex;
bool g_started = false;
bool g_start_ok = false;
std::string g_start_error;

std::string status_message(const PyStatus& st) {
  return fmt::format("{}{}{}", st.func != nullptr ? st.func : "", st.func != nullptr ? ": " : "",
                     st.err_msg != nullptr ? st.err_msg : "unknown error");
}

// Called once, with g_mutex held. Leaves the GIL released.
void start_interpreter() {
  g_started = true;
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.utf8_mode = 1;
  PyStatus st = Py_PreInitialize(&pre);
  if (PyStatus_Exception(st)) {
    g_start_error = "Python could not pre-initialize: " + status_message(st);
    return;
  }
  static PyMemAllocatorEx mem_wrapper, obj_wrapper;
  PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &g_inner_mem);
  PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &g_inner_obj);
  mem_wrapper = {&g_inner_mem, counted_malloc, counted_calloc, counted_realloc, counted_free};
  obj_wrapper = {&g_inner_obj, counted_malloc, counted_calloc, counted_realloc, counted_free};
  PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mem_wrapper);
  PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &obj_wrapper);

  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.site_import = 0;
  config.user_site_directory = 0;
  config.use_hash_seed = 1;
  config.hash_seed = 0;
  config.install_signal_handlers = 0;
  config.write_bytecode = 0;
  config.buffered_stdio = 0;
  config.parse_argv = 0;
  st = PyConfig_SetBytesString(&config, &config.home, ATTRIBUTION_PYTHON_HOME);
  if (!PyStatus_Exception(st)) st = PyConfig_SetBytesString(&config, &config.program_name, "attribution-rules");
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st)) {
    g_start_error = "Python could not start: " + status_message(st);
    return;
  }
  // Now holding the GIL.
  g_budget_exceeded = PyErr_NewExceptionWithDoc(
      "attribution.BudgetExceeded",
      "A rule call went over its time or memory budget (not an Exception: rules cannot catch it).",
      PyExc_BaseException, nullptr);
  PyObject* module = g_budget_exceeded != nullptr ? PyImport_AddModule("attribution") : nullptr;  // borrowed
  PyObject* globals = module != nullptr ? PyModule_GetDict(module) : nullptr;                   // borrowed
  PyObject* done = nullptr;
  if (globals != nullptr && PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0) {
    done = PyRun_String(kAttributionModuleSource, Py_file_input, globals, globals);
  }
  if (done == nullptr) {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyObject* text = value != nullptr ? PyObject_Str(value) : nullptr;
    const char* c = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
    g_start_error = fmt::format("the attribution module could not start: {}", c != nullptr ? c : "unknown error");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
  } else {
    Py_DECREF(done);
    PyObject* sys = PyImport_ImportModule("sys");
    if (sys != nullptr) {
      // Deep recursion fails as RecursionError well before the C stack of a worker thread.
      PyObject* r = PyObject_CallMethod(sys, "setrecursionlimit", "i", 300);
      Py_XDECREF(r);
      Py_DECREF(sys);
    }
    PyErr_Clear();
    g_start_ok = true;
  }
  PyEval_SaveThread();  // release the GIL: InterpreterLock takes it per use
}

}  // namespace

InterpreterLock::InterpreterLock() : lock_(g_mutex) {
  if (!g_started) start_interpreter();
  ok_ = g_start_ok;
  if (ok_) gil_ = PyGILState_Ensure();
}

InterpreterLock::~InterpreterLock() {
  if (ok_) PyGILState_Release(gil_);
}

const std::string& InterpreterLock::error() { return g_start_error; }

BudgetScope::BudgetScope(const Budget& budget) {
  g_events = 0;
  g_event_limit = budget.trace_events;
  g_time_tripped = false;
  g_trip_file.clear();
  g_trip_line = 0;
  g_memory_tripped = false;
  g_memory_base = g_net_bytes;
  g_memory_limit = budget.memory_bytes;
  g_memory_budget_on = true;
  PyEval_SetTrace(count_trace_event, nullptr);
}

BudgetScope::~BudgetScope() {
  PyEval_SetTrace(nullptr, nullptr);
  g_memory_budget_on = false;
}

bool BudgetScope::time_exceeded() const { return g_time_tripped; }
const std::string& BudgetScope::time_exceeded_file() const { return g_trip_file; }
int BudgetScope::time_exceeded_line() const { return g_trip_line; }
bool BudgetScope::memory_exceeded() const { return g_memory_tripped; }

PyObject* budget_exceeded_type() { return g_budget_exceeded; }

}  // namespace attribution::python
